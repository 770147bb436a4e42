import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { captureLogs } from '../../helpers/log-capture';
import { buildTestImage, pushTestImage, startRegistry, type TestRegistry } from '../../helpers/oci-registry';
import { tenantResources } from '../../helpers/resources';
import { stopRuntimeTest, startSandboxPlatform, type SandboxPlatform } from '../../helpers/runtime-platform';
import { exec } from '../../helpers/sandbox-runtime';
import { eventually } from '../../helpers/workers';

// A private registry's credentials kept in an integration connection (integration 'oci-registry',
// sealed like every connection's secrets) and named by spec.runtime.registryConnection: the node
// opens them for the pull. A registry of the test's own on loopback that asks for an account.
jest.setTimeout(180_000);

const password = `pw-${randomBytes(12).toString('hex')}`;
const account = { username: 'alice', password };
const logs = captureLogs();
// Whatever the in-process workers and tools print goes through these too.
const printed: string[] = [];
const writes = { out: process.stdout.write.bind(process.stdout), err: process.stderr.write.bind(process.stderr) };

let t: TestApp;
let tenant: TestTenant;
let platform: SandboxPlatform;
let registry: TestRegistry;
let scratch: string;
let image: string;
const answers: string[] = [];

beforeAll(async () => {
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) => (printed.push(String(chunk)), writes.out(chunk, ...rest))) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => (printed.push(String(chunk)), writes.err(chunk, ...rest))) as typeof process.stderr.write;
  t = await startTestApp({ taskQueue: unique('registry-creds') }, { logLevel: 'trace', logStream: logs.stream });
  tenant = await createTenant(t.app.pg, 'reg');
  platform = await startSandboxPlatform(t);
  scratch = path.join(t.config.dataDir, unique('registry-creds'));
  registry = await startRegistry(path.join(scratch, 'private'), account);
  buildTestImage(path.join(scratch, 'layout'), 'box', { files: { '/marker.txt': 'private image\n' }, env: ['PATH=/bin'] });
  // A repository of this run's own: the node's store outlives runs.
  image = `${registry.address}/${unique('team/box')}:1`;
  pushTestImage(path.join(scratch, 'layout'), 'box', image, account);
}, 120_000);

afterAll(async () => {
  process.stdout.write = writes.out;
  process.stderr.write = writes.err;
  await registry?.close();
  await stopRuntimeTest({ ...platform, t, scratch });
}, 60_000);

const resources = () => tenantResources(t, tenant);
async function api(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: object) {
  const response = await resources().api(method, url, body);
  answers.push(response.body);
  return response;
}

async function connection(name: string, secret: Record<string, string>) {
  const created = await api('POST', '/v0/integrations/connections', { metadata: { name, displayName: name }, spec: { integration: 'oci-registry', secret } });
  expect(created.statusCode).toBe(200);
}

async function failed(name: string) {
  return eventually(`${name} FAILED`, async () => {
    const body = (await api('GET', `/v0/sandboxes/${name}`)).json();
    return body.status === 'FAILED' ? body : undefined;
  }, 90_000);
}

test('the right credentials pull the private image and the sandbox runs from it', async () => {
  await connection('registry-ok', { REGISTRY: registry.address, USERNAME: 'alice', PASSWORD: password });
  const created = await api('POST', '/v0/sandboxes', { metadata: { name: 'private-ok' }, spec: { runtime: { image, registryConnection: 'registry-ok', memory: 128 } } });
  expect(created.statusCode).toBe(200);
  expect(created.json().spec.runtime.registryConnection).toBe('registry-ok');
  await resources().status('sandboxes', 'private-ok', 'DEPLOYED', 90_000);
  const socketPath = platform.runtime.socketPath(await resources().idOf('sandboxes', 'private-ok'));
  expect((await exec(socketPath, 'cat /marker.txt')).stdout).toBe('private image\n');
  // In use: the connection cannot go while the sandbox names it.
  expect(await api('DELETE', '/v0/integrations/connections/registry-ok')).toMatchObject({ statusCode: 409 });
  expect((await api('DELETE', '/v0/integrations/connections/registry-ok')).json().message).toContain("sandbox(s) 'private-ok'");
});

test('wrong credentials: the sandbox FAILED with the registry refusal', async () => {
  await connection('registry-wrong', { REGISTRY: registry.address, USERNAME: 'alice', PASSWORD: `${password}-wrong` });
  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'private-wrong' }, spec: { runtime: { image, registryConnection: 'registry-wrong', memory: 128 } } })).statusCode).toBe(200);
  expect((await failed('private-wrong')).events.at(-1).message).toMatch(new RegExp(`^failed to start: image '${image}' was refused by its registry \\(credentials missing or wrong\\)`));
});

test('the image on the node is not handed to a sandbox without credentials, nor are credentials sent to another registry', async () => {
  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'private-none' }, spec: { runtime: { image, memory: 128 } } })).statusCode).toBe(200);
  expect((await failed('private-none')).events.at(-1).message).toMatch(/was refused by its registry \(credentials missing or wrong\)/);

  await connection('registry-elsewhere', { REGISTRY: 'registry.example.com', USERNAME: 'alice', PASSWORD: password });
  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'private-elsewhere' }, spec: { runtime: { image, registryConnection: 'registry-elsewhere', memory: 128 } } })).statusCode).toBe(200);
  expect((await failed('private-elsewhere')).events.at(-1).message).toBe(
    `failed to start: integration connection 'registry-elsewhere' holds credentials for registry 'registry.example.com', not for '${registry.address}' of image '${image}'`,
  );
});

test('bad references to a connection are 400s naming the field', async () => {
  const create = (runtime: object) => api('POST', '/v0/sandboxes', { metadata: { name: unique('bad') }, spec: { runtime } });
  const field = 'body.spec.runtime.registryConnection';
  expect(await create({ image, registryConnection: 'nobody' })).toMatchObject({ statusCode: 400 });
  expect((await create({ image, registryConnection: 'nobody' })).json().message).toBe(`${field}: integration connection 'nobody' not found in workspace '${tenant.workspace}'`);
  const openai = await api('POST', '/v0/integrations/connections', { metadata: { name: 'a-model-key', displayName: 'k' }, spec: { integration: 'openai', secret: { API_KEY: 'sk-test-key-0123456789' } } });
  expect(openai.statusCode).toBe(200);
  expect((await create({ image, registryConnection: 'a-model-key' })).json().message).toBe(`${field}: integration connection 'a-model-key' is of integration 'openai', not 'oci-registry'`);
  expect((await create({ image: 'base', registryConnection: 'registry-ok' })).json().message).toBe(`${field}: applies only to an image of a registry (spec.runtime.image naming its host)`);
  const incomplete = await api('POST', '/v0/integrations/connections', { metadata: { name: 'half', displayName: 'h' }, spec: { integration: 'oci-registry', secret: { USERNAME: 'alice', PASSWORD: password } } });
  expect(incomplete.statusCode).toBe(400);
  expect(incomplete.json().message).toContain('spec.secret.REGISTRY is required');
});

test('the password appears in no API answer, no log line and nothing printed', async () => {
  answers.push((await api('GET', '/v0/integrations/connections')).body, (await api('GET', '/v0/integrations/connections/registry-ok')).body, (await api('GET', '/v0/sandboxes')).body);
  expect(answers.length).toBeGreaterThan(10);
  expect(logs.lines.length).toBeGreaterThan(0);
  for (const text of [...answers, ...logs.lines, ...printed]) expect(text).not.toContain(password);
  // Nor is it left on the node's disk by the pulls.
  const pulls = path.join(t.config.dataDir, 'images', 'oci', 'pulls');
  expect(fs.existsSync(pulls) ? fs.readdirSync(pulls) : []).toEqual([]);
});
