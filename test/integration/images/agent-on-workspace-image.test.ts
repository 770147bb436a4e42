import type { FastifyInstance } from 'fastify';
import fs from 'node:fs';
import path from 'node:path';
import { packFolder } from '../../../cli/deploy';
import { buildWorkspaceImage } from '../../helpers/build-context';
import { buildTestImage, pushTestImage, startRegistry, type TestRegistry } from '../../helpers/oci-registry';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { testRuntime } from '../../helpers/sandbox-runtime';
import { eventually, type RunningWorker } from '../../helpers/workers';
import { startWorkloadPlatform, stopRuntimeTest } from '../../helpers/runtime-platform';

// An agent whose spec.runtime.image is an image the workspace built (FROM a static busybox of the
// test's own registry, with a file and ENV added): its bundle's shell script serves what it sees.
jest.setTimeout(180_000);

let t: TestApp;
let tenant: TestTenant;
let gateway: FastifyInstance;
let runUrl: string;
let control: RunningWorker;
let node: RunningWorker;
let runtime: ReturnType<typeof testRuntime>;
let registry: TestRegistry;
let scratch: string;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('agent-image') });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  tenant = await createTenant(t.app.pg, 'agent-image');
  ({ runtime, gateway, runUrl, control, node } = await startWorkloadPlatform(t));
  scratch = path.join(t.config.dataDir, unique('agent-image-scratch'));
  registry = await startRegistry(path.join(scratch, 'registry'));
  buildTestImage(path.join(scratch, 'layout'), 'box', { files: { '/etc/motd': 'from the base\n' }, env: ['PATH=/bin'] });
}, 120_000);

afterAll(async () => {
  await registry?.close();
  await stopRuntimeTest({ runtime, node, control, gateway, t, scratch });
}, 60_000);

const api = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: object | Buffer, headers?: Record<string, string>) =>
  t.call(tenant.admin.apiKey, { method, url, payload, workspace: tenant.workspace, ...(headers ? { headers } : {}) });

async function deployed(agent: string, image: string): Promise<{ events: { status: string; message: string }[] }> {
  expect((await api('POST', '/v0/agents', { metadata: { name: agent }, spec: { runtime: { image, command: ['sh', '/app/run.sh'] } } })).statusCode).toBe(200);
  const dir = fs.mkdtempSync(path.join(scratch, 'bundle-'));
  const script = 'mkdir -p /tmp/www && { cat /etc/motd /opt/added.txt 2>/dev/null; echo "$GREETING"; } > /tmp/www/index.html && exec busybox httpd -f -p "$PORT" -h /tmp/www\n';
  fs.writeFileSync(path.join(dir, 'run.sh'), script);
  const uploaded = await api('PUT', `/v0/agents/${agent}/code`, await packFolder(dir), { 'content-type': 'application/gzip' });
  expect(uploaded.statusCode).toBeLessThan(300);
  return eventually('revision 1 settled', async () => {
    const body = (await api('GET', `/v0/agents/${agent}`)).json();
    const last = body.events[body.events.length - 1];
    return last.message.startsWith('revision 1') && (last.status === 'DEPLOYED' || last.status === 'FAILED') ? body : undefined;
  }, 90_000);
}

const served = async (agent: string) => (await fetch(`${runUrl}/${tenant.workspace}/agents/${agent}`, { headers: { authorization: `Bearer ${tenant.admin.apiKey}` } })).text();

async function builtImage(): Promise<string> {
  const base = `${registry.address}/${unique('test/box')}:1`;
  pushTestImage(path.join(scratch, 'layout'), 'box', base);
  return buildWorkspaceImage(api, base, 'agentimg', eventually);
}

test("an agent on a workspace image runs its bundle's script on it, with the image's files and ENV", async () => {
  const image = await builtImage();
  const agent = unique('agent');
  const settled = await deployed(agent, image);
  expect(settled.events.at(-1)).toEqual(expect.objectContaining({ status: 'DEPLOYED' }));
  expect(await served(agent)).toBe('from the base\nadded by the build\nfrom-the-image\n');
});

test('an agent on an image of a registry: the deployment pulls it onto the node first (in its events), then runs on it', async () => {
  const image = `${registry.address}/${unique('test/box')}:1`;
  pushTestImage(path.join(scratch, 'layout'), 'box', image);
  const agent = unique('agent');
  const settled = await deployed(agent, image);
  expect(settled.events.at(-1)).toEqual(expect.objectContaining({ status: 'DEPLOYED' }));
  expect(settled.events.map((event) => event.message)).toEqual(expect.arrayContaining([`waiting for its image: pulling '${image}' onto the node`, expect.stringMatching(new RegExp(`^image '${image.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}' pulled \\(sha256:`))]));
  expect(await served(agent)).toBe('from the base\n\n');
});
