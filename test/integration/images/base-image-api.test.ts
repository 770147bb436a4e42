import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { stopRuntimeTest, startSandboxPlatform, type SandboxPlatform } from '../../helpers/runtime-platform';
import { exec, testRuntime } from '../../helpers/sandbox-runtime';
import { standInMmdebstrap, type StandInMmdebstrap } from '../../helpers/stand-in-mmdebstrap';
import { eventually, startNodeWorker } from '../../helpers/workers';

// A node that has not built base-image yet: the first sandbox on it waits for the build, saying
// so, across a restart of the node's worker, then starts on it. The node's data folder is the
// test's own (the suite's has base-image already) and its mmdebstrap a stand-in whose build takes
// seconds and writes a tiny tree, so the restart lands mid-build.
jest.setTimeout(180_000);

let t: TestApp;
let tenant: TestTenant;
let platform: SandboxPlatform;
let standIn: StandInMmdebstrap;
let scratch: string;
let runtimeOptions: Parameters<typeof testRuntime>[1];
const extraRuntimes: ReturnType<typeof testRuntime>[] = [];

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('base-image-api') });
  tenant = await createTenant(t.app.pg, 'baseimg');
  // Short: the sandboxes' sockets live under it, and a socket's path has at most 107 bytes.
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'hbi-'));
  standIn = standInMmdebstrap(path.join(scratch, 'tool'));
  runtimeOptions = { dataDir: path.join(scratch, 'node'), images: { mmdebstrapPath: standIn.path } };
  platform = await startSandboxPlatform(t, runtimeOptions);
});

afterAll(async () => {
  for (const runtime of extraRuntimes) await runtime.close();
  await stopRuntimeTest({ ...platform, t, scratch });
});

const resources = () => tenantResources(t, tenant);
const api: ReturnType<typeof tenantResources>['api'] = (...args) => resources().api(...args);
const messages = async (name: string): Promise<string[]> => ((await api('GET', `/v0/sandboxes/${name}`)).json().events ?? []).map((e: { message: string }) => e.message);

test('the first sandbox on base-image waits for its build, across a node worker restart, then runs on it', async () => {
  standIn.setDelay(8_000);
  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'first' }, spec: { runtime: { image: 'base-image', memory: 128 } } })).statusCode).toBe(200);
  await eventually('the sandbox to say it waits for its image', async () => ((await messages('first')).includes("waiting for its image: building 'base-image' on the node from Debian's packages") ? true : undefined), 60_000);
  const waiting = (await api('GET', '/v0/sandboxes/first')).json();
  expect(waiting.status).toBe('DEPLOYING');
  expect(waiting.image).toEqual(expect.objectContaining({ pull: 'BUILDING', message: expect.stringContaining('building image') }));
  // The event comes first, then the build: the restart below lands while it runs.
  await eventually('the build to start', async () => (standIn.runs().started === 1 ? true : undefined), 60_000);
  expect(standIn.runs()).toEqual({ started: 1, finished: 0 });

  // The node's worker restarts mid-build: the new one takes the sandbox's start over.
  await platform.node.stop();
  const restarted = testRuntime(t.config.dataDir, runtimeOptions);
  extraRuntimes.push(restarted);
  platform.node = await startNodeWorker(t.config, restarted);

  const deployed = await resources().status('sandboxes', 'first', 'DEPLOYED', 120_000);
  const said = deployed.events.map((e: { message: string }) => e.message);
  expect(said).toEqual(expect.arrayContaining([expect.stringMatching(/^image 'base-image' (built|is on the node) \(sha256:[0-9a-f]{64}/)]));
  // Built once for the node: the restart did not start a second build.
  expect(standIn.runs()).toEqual({ started: 1, finished: 1 });
  const socketPath = restarted.socketPath(await resources().idOf('sandboxes', 'first'));
  expect((await exec(socketPath, 'cat /etc/debian_version')).stdout).toBe('stand-in\n');

  // A second sandbox finds it on the node.
  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'second' }, spec: { runtime: { image: 'blaxel/base-image:latest', memory: 128 } } })).statusCode).toBe(200);
  const second = await resources().status('sandboxes', 'second', 'DEPLOYED', 60_000);
  expect(second.events.map((e: { message: string }) => e.message)).toEqual(expect.arrayContaining([expect.stringMatching(/^image 'base-image' is on the node \(sha256:/)]));
  expect(standIn.runs().started).toBe(1);
});

test('/v0/images lists base-image read-only, with the digest and size a node stored', async () => {
  const list = (await api('GET', '/v0/images')).json();
  expect(list.map((image: { metadata: { name: string } }) => image.metadata.name).slice(0, 2)).toEqual(['base', 'base-image']);
  const image = (await api('GET', '/v0/images/base-image')).json();
  expect(image.metadata).toMatchObject({ name: 'base-image', builtIn: true });
  expect(image.spec.tags[0]).toMatchObject({ name: 'latest', state: 'READY', digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
  expect(image.spec.tags[0].sizeBytes).toBeGreaterThan(0);
  expect((await api('DELETE', '/v0/images/base-image')).statusCode).toBeGreaterThanOrEqual(400);
});

test("a fork of a sandbox on base-image runs on the same image with a copy of the source's writable layer", async () => {
  const source = platform.runtime.socketPath(await resources().idOf('sandboxes', 'first'));
  expect((await exec(source, 'echo before > /home/user/state.txt')).exitCode).toBe(0);
  expect((await api('POST', '/v0/sandboxes/first/fork', { targetName: 'first-fork' })).statusCode).toBe(200);
  const deployed = await resources().status('sandboxes', 'first-fork', 'DEPLOYED', 90_000);
  expect(deployed.spec.runtime.image).toBe('base-image');
  const fork = platform.runtime.socketPath(await resources().idOf('sandboxes', 'first-fork'));
  expect((await exec(fork, 'cat /etc/debian_version /home/user/state.txt')).stdout).toBe('stand-in\nbefore\n');
  // They diverge: each one's writes stay its own.
  await exec(source, 'echo after > /home/user/state.txt');
  expect((await exec(fork, 'cat /home/user/state.txt')).stdout).toBe('before\n');
});
