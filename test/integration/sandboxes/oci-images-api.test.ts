import fs from 'node:fs';
import path from 'node:path';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { buildTestImage, pushTestImage, startRegistry, type TestRegistry } from '../../helpers/oci-registry';
import { tenantResources } from '../../helpers/resources';
import { stopRuntimeTest, startSandboxPlatform, type SandboxPlatform } from '../../helpers/runtime-platform';
import { exec } from '../../helpers/sandbox-runtime';
import { eventually } from '../../helpers/workers';

// `spec.runtime.image` naming a registry: the sandbox's workflow pulls the image onto the node
// (its events say it waits for it), then starts the sandbox from it. A registry of the test's own
// on loopback, an image built from static busybox.
jest.setTimeout(120_000);

let t: TestApp;
let tenant: TestTenant;
let platform: SandboxPlatform;
let registry: TestRegistry;
let privateRegistry: TestRegistry;
let scratch: string;
// The node's store (under the shared test data folder) outlives this run: a repository of this run's own is never found there before it is pulled.
const repository = unique('test/box');

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('oci-api') });
  tenant = await createTenant(t.app.pg, 'oci');
  platform = await startSandboxPlatform(t);
  scratch = path.join(t.config.dataDir, unique('oci-scratch'));
  registry = await startRegistry(path.join(scratch, 'registry'));
  privateRegistry = await startRegistry(path.join(scratch, 'private'), { username: 'alice', password: 'secret-password' });
  buildTestImage(path.join(scratch, 'layout'), 'box', { files: { '/marker.txt': 'from the image\n' }, env: ['PATH=/bin', 'FROM_IMAGE=yes'] });
  pushTestImage(path.join(scratch, 'layout'), 'box', `${registry.address}/${repository}:1`);
  pushTestImage(path.join(scratch, 'layout'), 'box', `${registry.address}/${repository}:latest`);
  pushTestImage(path.join(scratch, 'layout'), 'box', `${privateRegistry.address}/team/box:1`, { username: 'alice', password: 'secret-password' });
}, 120_000);

afterAll(async () => {
  await Promise.all([registry?.close(), privateRegistry?.close()]);
  await stopRuntimeTest({ ...platform, t, scratch });
}, 60_000);

const resources = () => tenantResources(t, tenant);
const api: ReturnType<typeof tenantResources>['api'] = (...args) => resources().api(...args);

test('a sandbox on an image of a registry: pulled onto the node before its start, then running from it', async () => {
  const image = `${registry.address}/${repository}:1`;
  const created = await api('POST', '/v0/sandboxes', { metadata: { name: 'on-image' }, spec: { runtime: { image, memory: 128, envs: [{ name: 'MINE', value: '1' }] } } });
  expect(created.statusCode).toBe(200);
  expect(created.json().spec.runtime.image).toBe(image);
  const deployed = await resources().status('sandboxes', 'on-image', 'DEPLOYED', 90_000);
  const messages = deployed.events.map((event: { message: string }) => event.message);
  expect(messages).toEqual(expect.arrayContaining([`waiting for its image: pulling '${image}' onto the node`, expect.stringMatching(new RegExp(`^image '${image}' pulled \\(sha256:[0-9a-f]{64}\\)$`))]));
  const socketPath = platform.runtime.socketPath(await resources().idOf('sandboxes', 'on-image'));
  expect((await exec(socketPath, 'cat /marker.txt; echo "$FROM_IMAGE $MINE"')).stdout).toBe('from the image\nyes 1\n');
});

test("a fork of a sandbox on an image runs on the same image with the source's files", async () => {
  const source = platform.runtime.socketPath(await resources().idOf('sandboxes', 'on-image'));
  expect((await exec(source, 'echo written > /home/user/state.txt')).exitCode).toBe(0);
  const fork = await api('POST', '/v0/sandboxes/on-image/fork', { targetName: 'on-image-fork' });
  expect(fork.statusCode).toBe(200);
  const deployed = await resources().status('sandboxes', 'on-image-fork', 'DEPLOYED', 90_000);
  expect(deployed.spec.runtime.image).toBe(`${registry.address}/${repository}:1`);
  const socketPath = platform.runtime.socketPath(await resources().idOf('sandboxes', 'on-image-fork'));
  expect((await exec(socketPath, 'cat /marker.txt /home/user/state.txt; echo "$FROM_IMAGE $MINE"')).stdout).toBe('from the image\nwritten\nyes 1\n');
});

test('an image its registry does not have: the sandbox FAILED with the reason', async () => {
  const image = `${registry.address}/test/no-such-image:1`;
  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'no-image' }, spec: { runtime: { image, memory: 128 } } })).statusCode).toBe(200);
  const failed = await eventually('the sandbox FAILED', async () => {
    const body = (await api('GET', '/v0/sandboxes/no-image')).json();
    return body.status === 'FAILED' ? body : undefined;
  }, 90_000);
  expect(failed.events.at(-1).message).toMatch(new RegExp(`image '${image}' was not found in its registry: .*manifest unknown`));
  expect(fs.existsSync(path.join(t.config.dataDir, 'sandboxes', await resources().idOf('sandboxes', 'no-image')))).toBe(false);
});

test('an image of a private registry without spec.runtime.registryConnection: the pull is anonymous, so the sandbox FAILED saying the registry refused', async () => {
  const image = `${privateRegistry.address}/team/box:1`;
  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'private-image' }, spec: { runtime: { image, memory: 128 } } })).statusCode).toBe(200);
  const failed = await eventually('the sandbox FAILED', async () => {
    const body = (await api('GET', '/v0/sandboxes/private-image')).json();
    return body.status === 'FAILED' ? body : undefined;
  }, 90_000);
  expect(failed.events.at(-1).message).toBe(
    `failed to start: image '${image}' was refused by its registry (credentials missing or wrong): initializing source docker://${image}: reading manifest 1 in ${privateRegistry.address}/team/box: unauthorized: authentication required`,
  );
});

test('a malformed reference is a 400 naming the field and the problem; a name without a registry is still a built-in one', async () => {
  const malformed = await api('POST', '/v0/sandboxes', { metadata: { name: 'bad-ref' }, spec: { runtime: { image: `${registry.address}/Team/box` } } });
  expect(malformed.statusCode).toBe(400);
  expect(malformed.json().message).toBe(`body.spec.runtime.image: image reference '${registry.address}/Team/box' is malformed: the path component 'Team' must be lowercase letters and digits, separated by '.', '_', '__' or dashes`);
  const unknown = await api('POST', '/v0/sandboxes', { metadata: { name: 'bad-name' }, spec: { runtime: { image: 'team/box:1' } } });
  expect(unknown.statusCode).toBe(400);
  expect(unknown.json().message).toContain("body.spec.runtime.image: image 'team/box:1' does not exist");
});

test('a fixed tag already on the node starts without asking its registry; latest asks it again', async () => {
  // The first test pulled the image at tag 1 onto the node; latest is put there now; then the registry goes.
  const latest = `${registry.address}/${repository}:latest`;
  await platform.runtime.pullImage(latest);
  await registry.close();
  const image = `${registry.address}/${repository}:1`;
  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'cached-image' }, spec: { runtime: { image, memory: 128 } } })).statusCode).toBe(200);
  const deployed = await resources().status('sandboxes', 'cached-image', 'DEPLOYED', 90_000);
  expect(deployed.events.map((event: { message: string }) => event.message)).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(`^image '${image}' is on the node \\(sha256:`))]));
  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'latest-image' }, spec: { runtime: { image: latest, memory: 128 } } })).statusCode).toBe(200);
  const failed = await eventually('the sandbox FAILED', async () => {
    const body = (await api('GET', '/v0/sandboxes/latest-image')).json();
    return body.status === 'FAILED' ? body : undefined;
  }, 180_000);
  expect(failed.events.at(-1).message).toMatch(/could not be reached/);
}, 240_000);
