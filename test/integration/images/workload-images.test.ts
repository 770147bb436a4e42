import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { WorkspaceImageStore } from '../../../store/workspace-images';
import { createDeploymentControlActivities } from '../../../activities/deployment-control';
import { outboxEvents } from '../../helpers/usage-outbox';
import { randomUUID } from 'node:crypto';
import { NodeImageStore } from '../../../store/node-images';
import { RegistryImageStore } from '../../../store/registry-images';
import { RevisionStore } from '../../../store/revisions';
import { placeRevisionNode } from '../../../store/resource-nodes';
import { recordHeartbeat } from '../../../store/nodes';

// `spec.runtime.image` of agents, functions, models and jobs is checked as a sandbox's is: these
// are the API's answers (no node needed). Images of the workspace are made READY or FAILED through
// the store, as a build's workflow leaves them.
jest.setTimeout(60_000);

let t: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let images: WorkspaceImageStore;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('wl-images') });
  tenant = await createTenant(t.app.pg, 'wl-images');
  other = await createTenant(t.app.pg, 'wl-images-other');
  images = new WorkspaceImageStore(t.app.pg);
});

afterAll(async () => {
  await t.close();
});

const api = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object, who = tenant) =>
  t.call(who.admin.apiKey, { method, url, payload, workspace: who.workspace });

/** A tag of the workspace's image in the given end state, as its build would leave it. */
async function imageIn(who: TestTenant, state: 'READY' | 'FAILED', name = unique('img'), tag = '1'): Promise<string> {
  const row = await images.startBuild({ workspaceId: who.workspaceId, name, tag, contextSha256: 'a'.repeat(64), nodeQueue: 'none', actor: 'test' });
  const outcome = state === 'READY' ? { state, digest: `sha256:${'b'.repeat(64)}`, sizeBytes: 1234 } : { state, reason: 'RUN exited with 1' };
  await images.settle(row!.id, row!.build, outcome);
  return `${name}:${tag}`;
}

const create = (kind: string, runtime: Record<string, unknown>, who = tenant) =>
  api('POST', `/v0/${kind}`, { metadata: { name: unique(kind.slice(0, -1)) }, spec: { runtime: { command: ['sh', 'run.sh'], ...runtime } } }, who);

test.each(['agents', 'functions', 'models', 'jobs'])('%s: a malformed or unknown image is a 400 naming spec.runtime.image', async (kind) => {
  for (const image of ['Bad Image!', 'registry.example.com/UPPER/x:1', 'no-such-image', 'nothing-built:2']) {
    const res = await create(kind, { image });
    expect(res.statusCode).toBe(400);
    expect(res.json().message ?? res.json().error).toEqual(expect.stringContaining('body.spec.runtime.image'));
  }
});

test('a workspace image: READY is taken and stored; FAILED, or another workspace\'s, is a 400', async () => {
  const ready = await imageIn(tenant, 'READY');
  const failed = await imageIn(tenant, 'FAILED');
  const theirs = await imageIn(other, 'READY');
  for (const kind of ['agents', 'jobs']) {
    const ok = await create(kind, { image: ready });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().spec.runtime.image).toBe(ready);
    const bad = await create(kind, { image: failed });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toEqual(expect.stringContaining(`body.spec.runtime.image: image '${failed}' is FAILED: RUN exited with 1`));
    const foreign = await create(kind, { image: theirs });
    expect(foreign.statusCode).toBe(400);
    expect(foreign.json().message).toEqual(expect.stringContaining('does not exist'));
  }
  expect((await create('agents', { image: 'base' })).statusCode).toBe(200);
});

test('a workspace image an agent runs on cannot be deleted (409 naming the agent); once the agent moves, it can', async () => {
  const image = await imageIn(tenant, 'READY');
  const [name, tag] = image.split(':');
  const agent = unique('agent');
  expect((await api('POST', '/v0/agents', { metadata: { name: agent }, spec: { runtime: { image } } })).statusCode).toBe(200);
  const refused = await api('DELETE', `/v0/images/${name}/tags/${tag}`);
  expect(refused.statusCode).toBe(409);
  expect(refused.json().message).toEqual(expect.stringContaining(`agents/${agent}`));
  // An update keeping the image it had is taken; one to an unknown image is not, and changes nothing.
  expect((await api('PUT', `/v0/agents/${agent}`, { metadata: { name: agent }, spec: { runtime: { image, memory: 256 } } })).statusCode).toBe(200);
  expect((await api('PUT', `/v0/agents/${agent}`, { metadata: { name: agent }, spec: { runtime: { image: 'gone:9' } } })).statusCode).toBe(400);
  expect((await api('GET', `/v0/agents/${agent}`)).json().spec.runtime.image).toBe(image);
  expect((await api('PUT', `/v0/agents/${agent}`, { metadata: { name: agent }, spec: { runtime: { image: 'base' } } })).statusCode).toBe(200);
  expect((await api('DELETE', `/v0/images/${name}/tags/${tag}`)).statusCode).not.toBe(409);
});

test('registry images are taken for jobs and agents; registryConnection is checked like a sandbox\'s', async () => {
  expect((await create('jobs', { image: '127.0.0.1:5000/team/box:1' })).statusCode).toBe(200);
  expect((await create('agents', { image: '127.0.0.1:5000/team/box:1' })).statusCode).toBe(200);
  for (const kind of ['agents', 'jobs'] as const) {
    const unknown = await create(kind, { image: '127.0.0.1:5000/team/box:1', registryConnection: 'nope' });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().message).toEqual(expect.stringContaining("body.spec.runtime.registryConnection: integration connection 'nope' not found"));
  }
  const notRegistry = await create('agents', { image: 'base', registryConnection: 'nope' });
  expect(notRegistry.statusCode).toBe(400);
  expect(notRegistry.json().message).toEqual(expect.stringContaining('body.spec.runtime.registryConnection: applies only to an image of a registry'));
});

test("a workload's image storage counts the stored size of the image the workspace built for it", async () => {
  const image = await imageIn(tenant, 'READY');
  const name = unique('job');
  const created = await api('POST', '/v0/jobs', { metadata: { name }, spec: { runtime: { image, command: ['sh', 'run.sh'] } } });
  const key = { id: created.json().metadata.uid ?? created.json().id, workspace: tenant.workspace, workspaceId: tenant.workspaceId, kind: 'jobs' as const, name };
  const control = createDeploymentControlActivities({ pg: t.app.pg });
  const from = Date.UTC(2026, 0, 1);
  // 1234 bytes of image (imageIn's size) plus 766 of bundle, for 1000 s.
  await control.recordWorkloadUsage({ key: { ...key, id: randomUUID() }, from, to: from + 1_000_000, memoryMb: 0, bundleBytes: 766, image });
  await control.recordWorkloadUsage({ key: { ...key, id: randomUUID() }, from, to: from + 1_000_000, memoryMb: 0, bundleBytes: 766, image: 'base' });
  const events = (await outboxEvents(t.app.pg, tenant.accountId)).filter((event) => event.resource_name === name);
  expect(events.map((event) => event.quantity).sort()).toEqual([Math.round((766 / 1024 ** 3) * 1000 * 1e6) / 1e6, Math.round((2000 / 1024 ** 3) * 1000 * 1e6) / 1e6].sort());
  expect(new Set(events.map((event) => event.billing_dimension))).toEqual(new Set(['job_image_storage_gbs']));
});

/** A node's row, as its heartbeat writes it, so a registry pull's queue names it. */
async function nodeNamed(id: string): Promise<string> {
  const taskQueue = `${unique('wl-images')}-node-${id}`;
  const capacity = { memoryBytes: 8 * 1024 ** 3, cpus: 2, diskBytes: 100 * 1024 ** 3 };
  await recordHeartbeat(t.app.pg, { id, taskQueue, region: 'test', labels: {}, capacity, load: { sandboxes: 0, memoryCommittedBytes: 0, diskFreeBytes: 50 * 1024 ** 3 }, startedAt: new Date() });
  return taskQueue;
}

/** An agent created through the API whose first revision is placed on `nodeId`. */
async function agentOn(nodeId: string, image: string) {
  const name = unique('agent');
  const created = await api('POST', '/v0/agents', { metadata: { name }, spec: { runtime: { image } } });
  expect(created.statusCode).toBe(200);
  const { rows } = await t.app.pg.query<{ id: string }>('SELECT id FROM resources WHERE workspace_id = $1 AND kind = $2 AND name = $3', [tenant.workspaceId, 'agents', name]);
  const key = { id: rows[0].id, workspace: tenant.workspace, workspaceId: tenant.workspaceId, kind: 'agents' as const, name };
  const revision = await new RevisionStore(t.app.pg).create({ resourceId: key.id, bundleSha256: 'c'.repeat(64), bundleBytes: 100, actor: 'test' });
  await placeRevisionNode(t.app.pg, key.id, revision, nodeId);
  return key;
}

const gbSeconds = (bytes: number, seconds: number) => Math.round((bytes / 1024 ** 3) * seconds * 1e6) / 1e6;

test("a workload on base-image or a registry image is billed the image's stored size on its node, as a sandbox is", async () => {
  const control = createDeploymentControlActivities({ pg: t.app.pg });
  const [nodeA, nodeB] = [unique('node-a'), unique('node-b')];
  const [queueA, queueB] = [await nodeNamed(nodeA), await nodeNamed(nodeB)];
  // base-image as two nodes built it (sizes differ by node: each builds from its own suite).
  const nodeImages = new NodeImageStore(t.app.pg);
  await nodeImages.record(nodeA, 'base-image', { state: 'READY', digest: `sha256:${'1'.repeat(64)}`, sizeBytes: 400_000_000 });
  await nodeImages.record(nodeB, 'base-image', { state: 'READY', digest: `sha256:${'2'.repeat(64)}`, sizeBytes: 410_000_000 });
  // A registry image the workspace pulled onto both nodes, and another only onto node B.
  const pulls = new RegistryImageStore(t.app.pg);
  const reference = `127.0.0.1:5000/team/${unique('box')}:1`;
  await pulls.settle(tenant.workspaceId, reference, queueA, { state: 'READY', digest: `sha256:${'3'.repeat(64)}`, sizeBytes: 200_000_000, message: 'pulled' });
  await pulls.settle(tenant.workspaceId, reference, queueB, { state: 'READY', digest: `sha256:${'3'.repeat(64)}`, sizeBytes: 200_000_123, message: 'pulled' });
  const onlyB = `127.0.0.1:5000/team/${unique('box')}:2`;
  await pulls.settle(tenant.workspaceId, onlyB, queueB, { state: 'READY', digest: `sha256:${'4'.repeat(64)}`, sizeBytes: 50_000_000, message: 'pulled' });

  const from = Date.UTC(2026, 1, 1);
  const cases: Array<{ node: string; image: string; imageBytes: number }> = [
    { node: nodeA, image: 'base-image', imageBytes: 400_000_000 },
    { node: nodeB, image: 'blaxel/base-image:latest', imageBytes: 410_000_000 },
    { node: nodeA, image: reference, imageBytes: 200_000_000 },
    { node: nodeB, image: reference, imageBytes: 200_000_123 },
    // Pulled on another node than the one the workload runs on: the same digest's size.
    { node: nodeA, image: onlyB, imageBytes: 50_000_000 },
    { node: nodeA, image: 'base', imageBytes: 0 },
  ];
  try {
    for (const { node, image, imageBytes } of cases) await expectBilled(control, node, image, imageBytes, from);
  } finally {
    await t.app.pg.query('DELETE FROM node_images WHERE node_id = ANY($1)', [[nodeA, nodeB]]);
    await t.app.pg.query('DELETE FROM nodes WHERE id = ANY($1)', [[nodeA, nodeB]]);
  }
});

/** An agent on `image` placed on `node` is billed its bundle plus `imageBytes`, in its usage and its state history. */
async function expectBilled(control: ReturnType<typeof createDeploymentControlActivities>, node: string, image: string, imageBytes: number, from: number): Promise<void> {
  const key = await agentOn(node, image);
  await control.recordWorkloadUsage({ key, from, to: from + 1_000_000, memoryMb: 0, bundleBytes: 100, image });
  await control.recordWorkloadState(key, from, { memoryMb: 0, bundleBytes: 100, image });
  const events = await outboxEvents(t.app.pg, tenant.accountId, key.id);
  expect({ image, node, quantities: events.map((event) => [event.billing_dimension, event.quantity]) }).toEqual({ image, node, quantities: [['agent_image_storage_gbs', gbSeconds(100 + imageBytes, 1000)]] });
  const { rows } = await t.app.pg.query<{ stored_bytes: string }>('SELECT stored_bytes FROM resource_state_intervals WHERE resource_uuid = $1 AND ended_at IS NULL', [key.id]);
  expect({ image, stored: Number(rows[0].stored_bytes) }).toEqual({ image, stored: 100 + imageBytes });
}
