import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { WorkspaceImageStore } from '../../../store/workspace-images';
import { createDeploymentControlActivities } from '../../../activities/deployment-control';
import { outboxEvents } from '../../helpers/usage-outbox';

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
  await control.recordWorkloadUsage({ key: { ...key, id: unique('uuid') }, from, to: from + 1_000_000, memoryMb: 0, bundleBytes: 766, image });
  await control.recordWorkloadUsage({ key: { ...key, id: unique('uuid') }, from, to: from + 1_000_000, memoryMb: 0, bundleBytes: 766, image: 'base' });
  const events = (await outboxEvents(t.app.pg, tenant.accountId)).filter((event) => event.resource_name === name);
  expect(events.map((event) => event.quantity).sort()).toEqual([Math.round((766 / 1024 ** 3) * 1000 * 1e6) / 1e6, Math.round((2000 / 1024 ** 3) * 1000 * 1e6) / 1e6].sort());
  expect(new Set(events.map((event) => event.billing_dimension))).toEqual(new Set(['job_image_storage_gbs']));
});
