import fs from 'node:fs';
import path from 'node:path';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { buildTestImage, pushTestImage, startRegistry, type TestRegistry } from '../../helpers/oci-registry';
import { tenantResources } from '../../helpers/resources';
import { stopRuntimeTest } from '../../helpers/runtime-platform';
import { exec, testRuntime } from '../../helpers/sandbox-runtime';
import { startSlowProxy } from '../../helpers/slow-proxy';
import { eventually, startControlWorker, startNodeWorker, type RunningWorker } from '../../helpers/workers';
import { nodeWorkerProcess, type NodeWorkerProcess } from '../../helpers/node-worker-process';
import { TERMINAL_EXECUTION_STATUSES, jobExecutionWorkflowId } from '../../../domain/jobs/execution';
import { sandboxWorkflowId } from '../../../domain/sandbox/sandbox';
import { deployJobCode } from '../jobs/helpers';

// Pulls of registry images as the workspace sees them: progress (of a total, with an event every
// tenth) on the sandbox's status and the image's row, the image under GET /v0/images, its
// deletion; a node worker killed mid-pull; a job execution and a sandbox sharing one pull of a
// private image. The registries are reached through relays that pass 1 MB/s, so a pull of 6 MB
// lasts seconds (and a relay can hold a pull under way for as long as a step needs).
jest.setTimeout(240_000);

let t: TestApp;
let tenant: TestTenant;
let control: RunningWorker;
let node: RunningWorker | undefined;
let child: NodeWorkerProcess | undefined;
let registry: TestRegistry;
let slow: Awaited<ReturnType<typeof startSlowProxy>>;
let privateRegistry: TestRegistry;
let privateSlow: Awaited<ReturnType<typeof startSlowProxy>>;
const account = { username: 'shared', password: `pw-${unique('secret')}` };
let scratch: string;
const runtime = () => testRuntime(t.config.dataDir);
// The node's store outlives this run: a repository of this run's own is never on the node before.
const repository = unique('test/slow');

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('pulls') });
  tenant = await createTenant(t.app.pg, 'pulls');
  control = await startControlWorker(t.config, t.app.pg);
  scratch = path.join(t.config.dataDir, unique('pulls-scratch'));
  registry = await startRegistry(path.join(scratch, 'registry'));
  slow = await startSlowProxy(registry.address, 1_000_000);
  buildTestImage(path.join(scratch, 'layout'), 'slow', { files: { '/marker.txt': 'pulled slowly\n' }, randomFiles: { '/data/noise': 6_000_000 }, env: ['PATH=/bin'] });
  pushTestImage(path.join(scratch, 'layout'), 'slow', `${registry.address}/${repository}:1`);
  buildTestImage(path.join(scratch, 'layout'), 'twin', { files: { '/marker.txt': 'one pull for two\n' }, randomFiles: { '/data/noise': 3_000_000 }, env: ['PATH=/bin'] });
  pushTestImage(path.join(scratch, 'layout'), 'twin', `${registry.address}/${repository}-twin:1`);
  privateRegistry = await startRegistry(path.join(scratch, 'private'), account);
  privateSlow = await startSlowProxy(privateRegistry.address, 1_000_000);
  buildTestImage(path.join(scratch, 'layout'), 'shared', { files: { '/marker.txt': 'one shared pull\n' }, randomFiles: { '/data/noise': 6_000_000 }, env: ['PATH=/bin'] });
  pushTestImage(path.join(scratch, 'layout'), 'shared', `${privateRegistry.address}/${repository}-shared:1`, account);
}, 120_000);

afterAll(async () => {
  child?.kill();
  await slow?.close();
  await registry?.close();
  await privateSlow?.close();
  await privateRegistry?.close();
  await stopRuntimeTest({ runtime: runtime(), node, control, t, scratch });
}, 60_000);

const resources = () => tenantResources(t, tenant);
const api: ReturnType<typeof tenantResources>['api'] = (...args) => resources().api(...args);

const encoded = (text: string) => encodeURIComponent(text);

/** The ids of the image-pull workflows of `image` in the workspace, by their search attributes (visibility lags the workflow's own record a moment). */
async function pullWorkflows(image: string): Promise<string[]> {
  const query = `HangarWorkspace = '${tenant.workspace}' AND HangarResourceKind = 'image' AND HangarResourceName = '${image}'`;
  return eventually('the pull in visibility', async () => {
    const found: string[] = [];
    for await (const pull of t.app.temporal.workflow.list({ query })) found.push(pull.workflowId);
    return found.length > 0 ? found : undefined;
  });
}

const TENTHS = [10, 20, 30, 40, 50, 60, 70, 80, 90];

/** The tenth events of the last pull among `messages` (a pull begun again tells them again from 10 %). */
function lastPullTenths(messages: string[], image: string): string[] {
  const tenths = messages.filter((message) => message.startsWith(`pulling '${image}': `));
  return tenths.slice(tenths.lastIndexOf(`pulling '${image}': 10 %`));
}

test('a node worker killed mid-pull: the pull starts again on the next worker, then the sandbox starts; progress shows on the way', async () => {
  const image = `${slow.address}/${repository}:1`;
  child = nodeWorkerProcess(t.config, scratch);
  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'slow' }, spec: { runtime: { image, memory: 128 } } })).statusCode).toBe(200);

  // Under way: the sandbox says it waits for its image and how far the pull is; so does the image's row.
  const pulling = await eventually('the pull under way', async () => {
    const body = (await api('GET', '/v0/sandboxes/slow')).json();
    return body.image?.pull === 'PULLING' && body.image.progress?.bytesDone > 0 ? body : undefined;
  }, 60_000).catch((err: Error) => {
    throw new Error(`${err.message}; the node worker's output:\n${child!.output().slice(-3000)}`);
  });
  expect(pulling.status).toBe('DEPLOYING');
  expect(pulling.image.message).toMatch(new RegExp(`^pulling image '${image.replace(/[.]/g, '\\.')}': \\d+\\.\\d of \\d+\\.\\d MB received \\(\\d+ %\\), 0 of 1 layer unpacked$`));
  // The manifest was read first: the pull knows its total, and says how far of it it is.
  const total: number = pulling.image.progress.bytesTotal;
  expect(total).toBeGreaterThan(6_000_000);
  expect(pulling.image.progress).toEqual({ bytesDone: expect.any(Number), layersDone: 0, bytesTotal: total, layersTotal: 1, percent: Math.floor((100 * pulling.image.progress.bytesDone) / total) });
  expect(pulling.image.progress.percent).toBeLessThanOrEqual(99);
  const listed = (await api('GET', '/v0/images')).json().find((entry: { metadata: { name: string } }) => entry.metadata.name === `${slow.address}/${repository}`);
  expect(listed.metadata).toEqual(expect.objectContaining({ registry: true, builtIn: false }));
  expect(listed.spec.tags[0]).toEqual(expect.objectContaining({ name: '1', reference: image, state: 'PULLING' }));
  expect(listed.spec.tags[0].progress).toEqual({ bytesDone: expect.any(Number), layersDone: expect.any(Number), bytesTotal: total, layersTotal: 1, percent: expect.any(Number) });
  expect(listed.spec.tags[0].progress.percent).toBeLessThanOrEqual(99);

  child.kill();
  node = await startNodeWorker(t.config, runtime(), { pg: t.app.pg });
  // The pull's heartbeat stops: Temporal runs it again on the worker that polls now.
  const deployed = await resources().status('sandboxes', 'slow', 'DEPLOYED', 180_000);
  // Over: 100 %, every byte of the one layer received, the layer unpacked while it came.
  const complete = { bytesDone: total, layersDone: 1, bytesTotal: total, layersTotal: 1, percent: 100 };
  expect(deployed.image).toEqual(expect.objectContaining({ reference: image, pull: 'PULLED', digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), progress: complete, message: null }));
  // What the killed pull left on the node (its layout, half-extracted layers) went with the next pull.
  const pulls = fs.readdirSync(path.join(t.config.dataDir, 'images', 'oci', 'pulls'));
  expect(pulls.filter((name) => name.startsWith(`${child!.process.pid}-`))).toEqual([]);
  const socketPath = runtime().socketPath(await resources().idOf('sandboxes', 'slow'));
  expect((await exec(socketPath, 'cat /marker.txt')).stdout).toBe('pulled slowly\n');

  const ready = (await api('GET', `/v0/images/${encoded(`${slow.address}/${repository}`)}/tags/1`)).json();
  expect(ready).toEqual(expect.objectContaining({ state: 'READY', digest: deployed.image.digest, reason: null }));
  expect(ready.sizeBytes).toBeGreaterThan(6_000_000);
  // The last pull's progress, at 100 %.
  expect(ready.progress).toEqual(complete);
  // Two pulls began: the killed worker's and the next one's; one ended.
  const messages = ready.events.map((event: { message: string }) => event.message);
  expect(messages.filter((message: string) => message === 'pulling for slow')).toHaveLength(2);
  expect(messages).toContain(`pulled for slow (${deployed.image.digest})`);
  // An event every tenth, on the image and on the sandbox waiting for it: the whole of the last
  // pull's, in order, before it ended.
  const sandboxMessages = deployed.events.map((event: { message: string }) => event.message);
  for (const seen of [messages, sandboxMessages]) expect(lastPullTenths(seen, image)).toEqual(TENTHS.map((tenth) => `pulling '${image}': ${tenth} %`));
});

test('a registry image in use cannot be deleted (409 naming its sandbox); once unused it is, and is no longer listed', async () => {
  const name = `${slow.address}/${repository}`;
  const refused = await api('DELETE', `/v0/images/${encoded(name)}/tags/1`);
  expect(refused.statusCode).toBe(409);
  expect(refused.json().message).toBe(`image '${name}:1' is used by sandboxes/slow; delete or move them to another image first`);
  // The same reference written by the whole path is the same image.
  expect((await api('DELETE', `/v0/images/${encoded(`${name}:1`)}`)).statusCode).toBe(409);

  expect((await api('DELETE', '/v0/sandboxes/slow')).statusCode).toBe(200);
  await resources().gone('sandboxes', 'slow');
  const deleted = await api('DELETE', `/v0/images/${encoded(name)}/tags/1`);
  expect(deleted.statusCode).toBe(200);
  expect(deleted.json()).toEqual(expect.objectContaining({ reference: `${name}:1`, state: 'READY' }));
  expect((await api('GET', '/v0/images')).json().map((entry: { metadata: { name: string } }) => entry.metadata.name)).not.toContain(name);
  expect((await api('DELETE', `/v0/images/${encoded(name)}/tags/1`)).statusCode).toBe(404);
});

test('two sandboxes asking for one image at once share one pull: one workflow, one download', async () => {
  const image = `${slow.address}/${repository}-twin:1`;
  const created = await Promise.all(['twin-a', 'twin-b'].map((name) => api('POST', '/v0/sandboxes', { metadata: { name }, spec: { runtime: { image, memory: 128 } } })));
  expect(created.map((res) => res.statusCode)).toEqual([200, 200]);
  const deployed = await Promise.all(['twin-a', 'twin-b'].map((name) => resources().status('sandboxes', name, 'DEPLOYED', 120_000)));
  expect(deployed[0].image.digest).toBe(deployed[1].image.digest);
  for (const name of ['twin-a', 'twin-b']) {
    const socketPath = runtime().socketPath(await resources().idOf('sandboxes', name));
    expect((await exec(socketPath, 'cat /marker.txt')).stdout).toBe('one pull for two\n');
  }
  const row = (await api('GET', `/v0/images/${encoded(`${slow.address}/${repository}-twin`)}/tags/1`)).json();
  const messages: string[] = row.events.map((event: { message: string }) => event.message);
  expect(messages.filter((message) => message.startsWith('pulling for '))).toHaveLength(1);
  expect(messages.filter((message) => message.startsWith('pulled for '))).toHaveLength(1);
  // The pull is a workflow of its own, found by the workspace's search attributes like the others.
  expect(await pullWorkflows(image)).toEqual([`image-pull/${tenant.workspace}/${t.config.taskQueue}-node-${t.config.nodeId}/${image}`]);
});

test('bad names: a malformed registry reference is a 400 naming the parameter', async () => {
  const bad = await api('DELETE', `/v0/images/${encoded('127.0.0.1:5000/Team//box')}`);
  expect(bad.statusCode).toBe(400);
  expect(bad.json().message).toMatch(/^params\.name: image reference '127\.0\.0\.1:5000\/Team\/\/box' is malformed/);
});

/** A workflow history as text, its payloads (bytes) decoded. */
function historyText(value: unknown): string {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  if (Array.isArray(value)) return value.map(historyText).join('\n');
  if (value !== null && typeof value === 'object') return Object.values(value).map(historyText).join('\n');
  return String(value ?? '');
}

/** The `skopeo copy` processes running on this machine for `canonical` (the node worker's, wherever it runs). */
function skopeoCopiesOf(canonical: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = (() => {
      try {
        return fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      } catch {
        return [];
      }
    })();
    if (path.basename(argv[0] ?? '') === 'skopeo' && argv.includes('copy') && argv.includes(`docker://${canonical}`)) pids.push(Number(entry));
  }
  return pids;
}

test('a job execution and a sandbox asking for one private image share one pull (one workflow, one copy), redone when its node worker is SIGKILLed; then the job\'s task runs', async () => {
  const image = `${privateSlow.address}/${repository}-shared:1`;
  const connection = { metadata: { name: 'shared-registry', displayName: 'shared' }, spec: { integration: 'oci-registry', secret: { REGISTRY: privateSlow.address, USERNAME: account.username, PASSWORD: account.password } } };
  expect((await api('POST', '/v0/integrations/connections', connection)).statusCode).toBe(200);
  const runtimeSpec = { image, registryConnection: 'shared-registry' };
  const job = unique('shared-job');
  expect((await api('POST', '/v0/jobs', { metadata: { name: job }, spec: { runtime: { ...runtimeSpec, command: ['sh', '/app/task.sh'], memory: 128 } } })).statusCode).toBe(200);
  const jobId = await resources().idOf('jobs', job);
  await deployJobCode(t.app.pg, t.config.dataDir, jobId, { 'task.sh': "grep -q 'one shared pull' /marker.txt\n" });

  // The pull runs in a node worker of its own process, to be killed in it.
  await node!.stop();
  node = undefined;
  child = nodeWorkerProcess(t.config, scratch);
  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'shared' }, spec: { runtime: { ...runtimeSpec, memory: 128 } } })).statusCode).toBe(200);
  const imageRow = async () => (await t.app.pg.query<{ state: string; progress: { bytesDone: number } | null }>('SELECT state, progress FROM registry_images WHERE workspace_id = $1 AND reference = $2', [tenant.workspaceId, image])).rows[0];
  await eventually('the pull under way', async () => ((await imageRow())?.progress?.bytesDone ?? 0) > 0 || undefined, 60_000).catch((err: Error) => {
    throw new Error(`${err.message}; the node worker's output:\n${child!.output().slice(-3000)}`);
  });
  // The registry's answers are held: the pull stays under way while the job's execution joins it.
  privateSlow.hold();
  expect((await api('POST', `/${tenant.workspace}/jobs/${job}/executions`, { tasks: [{}], id: 'shared' })).statusCode).toBe(200);
  // Joined: its wait copies the pull's progress onto the job, as onto the sandbox.
  await eventually('the job to follow the pull', async () => {
    const { rows } = await t.app.pg.query<{ image: { pull?: string; progress?: { bytesTotal?: number } } | null }>("SELECT state->'image' AS image FROM resources WHERE id = $1", [jobId]);
    return rows[0].image?.pull === 'PULLING' && rows[0].image.progress?.bytesTotal ? true : undefined;
  }, 60_000);
  expect(skopeoCopiesOf(image)).toHaveLength(1);

  child.kill();
  privateSlow.release();
  node = await startNodeWorker(t.config, runtime(), { pg: t.app.pg });
  const deployed = await resources().status('sandboxes', 'shared', 'DEPLOYED', 180_000);
  const done = await eventually('the execution to end', async () => {
    const body = (await api('GET', `/${tenant.workspace}/jobs/${job}/executions/shared`)).json();
    return TERMINAL_EXECUTION_STATUSES.includes(body.status) ? body : undefined;
  }, 120_000);
  expect(done.status).toBe('succeeded');

  // One workflow pulled for both, twice begun (the killed worker's pull, then the next one's), once ended.
  const pulls = await pullWorkflows(image);
  const pullId = `image-pull/${tenant.workspace}/${t.config.taskQueue}-node-${t.config.nodeId}/${image}/shared-registry`;
  expect(pulls).toEqual([pullId]);
  const row = (await api('GET', `/v0/images/${encoded(`${privateSlow.address}/${repository}-shared`)}/tags/1`)).json();
  const messages: string[] = row.events.map((event: { message: string }) => event.message);
  const begun = messages.filter((message) => message.startsWith('pulling for '));
  expect(begun).toHaveLength(2);
  expect(['pulling for shared', `pulling for ${job}`]).toContain(begun[0]);
  expect(begun[1]).toBe(begun[0]);
  expect(messages.filter((message) => message.startsWith('pulled for '))).toEqual([begun[0].replace('pulling', 'pulled') + ` (${deployed.image.digest})`]);

  // Each waiter says so: its wait, a tenth at a time, the digest.
  const jobMessages: string[] = (await api('GET', `/v0/jobs/${job}`)).json().events.map((event: { message: string }) => event.message);
  const tenthEvents = TENTHS.map((tenth) => `pulling '${image}': ${tenth} %`);
  expect(lastPullTenths(jobMessages, image)).toEqual(tenthEvents);
  expect(jobMessages).toContain(`image '${image}' pulled (${deployed.image.digest})`);
  expect(lastPullTenths(deployed.events.map((event: { message: string }) => event.message), image)).toEqual(tenthEvents);

  // The account went by its connection's name: no workflow's history holds the password.
  const executionId = jobExecutionWorkflowId(tenant.workspace, job, 'shared');
  for (const workflowId of [pullId, executionId, sandboxWorkflowId(tenant.workspace, 'shared')]) {
    const history = historyText(await t.app.temporal.workflow.getHandle(workflowId).fetchHistory());
    // The payloads are read (the connection's name is in them), and the password is not.
    expect(history).toContain('shared-registry');
    expect(history).not.toContain(account.password);
  }
  const executionHistory = historyText(await t.app.temporal.workflow.getHandle(executionId).fetchHistory());
  expect(executionHistory).toContain('awaitImagePull');
  expect(executionHistory).not.toContain('pullSandboxImage');
});
