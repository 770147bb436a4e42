import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { sandboxWorkflowId } from '../../../domain/sandbox/sandbox';
import { volumeWorkflowId } from '../../../domain/volume/volume';
import { repoRoot } from '../../../scripts/stack/binaries';
import { sandboxLoad } from '../../../runtime/node-heartbeat';
import { setNodeDrained } from '../../../store/nodes';
import { startNodeLossWatch } from '../../../workers/singletons';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { sandboxSpec } from '../../helpers/sandbox-runtime';
import { inProcessNode, removeInProcessNode, type InProcessNode } from '../../helpers/in-process-nodes';
import { eventually, startControlWorker, startNodeWorker, type RunningWorker } from '../../helpers/workers';

/**
 * Sandboxes and volumes placed by their workflows on two runtime nodes of one platform (each
 * with its own data folder, runtime and worker in this process, both reporting to the same
 * PostgreSQL and polling the same Temporal): by free memory, never on a drained node, a
 * sandbox on its volume's node; a node killed: once LOST its sandboxes are FAILED with a Warning
 * event and their state history ends at its last heartbeat, one deleted meanwhile goes without
 * it, a sandbox of its volume is refused saying why; the node, back, removes them before it
 * takes work.
 */
jest.setTimeout(240_000);

const LOST_AFTER_SECONDS = 12;

let t: TestApp;
let tenant: TestTenant;
let control: RunningWorker;
let temporal: Client;
const watchId = unique('node-loss-watch');
const nodes: Record<'a' | 'b', InProcessNode> = {} as Record<'a' | 'b', InProcessNode>;
// Node ids are the platform's, shared by the test files running at once: this file's own.
const A = unique('pa');
const B = unique('pb');
/** Sandboxes started on a node's runtime directly, whose memory limits make the other node the roomier. */
const ballast: { node: InProcessNode; id: string }[] = [];

async function startNode(node: InProcessNode): Promise<void> {
  node.worker = await startNodeWorker(node.config, node.runtime, { pg: t.app.pg });
}

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('rplace'), nodeLostSeconds: LOST_AFTER_SECONDS });
  tenant = await createTenant(t.app.pg, 'rplace');
  control = await startControlWorker(t.config, t.app.pg);
  temporal = new Client({ connection: await Connection.connect({ address: t.config.temporalAddress }), namespace: t.config.temporalNamespace });
  await startNodeLossWatch(temporal, t.config.taskQueue, { workflowId: watchId, intervalMs: 500 });
  for (const id of ['a', 'b'] as const) {
    nodes[id] = inProcessNode(t.config, id === 'a' ? A : B, `hr${id}-`);
    await startNode(nodes[id]);
  }
}, 120_000);

afterAll(async () => {
  for (const node of Object.values(nodes)) await removeInProcessNode(node);
  await temporal?.workflow.getHandle(watchId).terminate('test over').catch(() => undefined);
  await temporal?.connection.close();
  await control?.stop();
  await t?.close();
});

const api = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) => t.call(tenant.admin.apiKey, { method, url, payload, workspace: tenant.workspace });

/** Makes `node` the one with less free memory: a sandbox with a 4 GiB limit on its runtime. */
async function weighDown(node: InProcessNode): Promise<void> {
  const spec = sandboxSpec({ memoryMb: 4096 });
  await node.runtime.start(spec);
  ballast.push({ node, id: spec.id });
  // Until a heartbeat written after the start reports what the node runs now (a sandbox of the
  // last test may still be going away meanwhile).
  const started = (await t.app.pg.query<{ now: Date }>('SELECT now()')).rows[0].now;
  await eventually(`node ${node.id} to report its ballast`, async () => {
    const { rows } = await t.app.pg.query<{ sandboxes: number }>('SELECT sandboxes FROM nodes WHERE id = $1 AND heartbeat_at > $2', [node.id, started]);
    return rows[0] !== undefined && rows[0].sandboxes === sandboxLoad(await node.runtime.list()).sandboxes ? true : undefined;
  });
}

async function liftAll(): Promise<void> {
  for (const { node, id } of ballast.splice(0)) await node.runtime.remove(id);
  for (const node of Object.values(nodes)) await reportedAsRunning(node);
}

/** Waits for `node` to report the sandboxes its runtime runs (removals may still be under way). */
async function reportedAsRunning(node: InProcessNode): Promise<void> {
  await eventually(`node ${node.id} to report what it runs`, async () => {
    const { rows } = await t.app.pg.query<{ sandboxes: number }>('SELECT sandboxes FROM nodes WHERE id = $1', [node.id]);
    return rows[0]?.sandboxes === sandboxLoad(await node.runtime.list()).sandboxes ? true : undefined;
  });
}

/** Creates `kind` `name` and waits until it is out of DEPLOYING; answers its envelope. */
async function created(kind: 'sandboxes' | 'volumes', name: string, spec: object) {
  const res = await api('POST', `/v0/${kind}`, { metadata: { name }, spec });
  expect(res.statusCode).toBe(200);
  return settled(kind, name);
}

async function settled(kind: 'sandboxes' | 'volumes', name: string, timeoutMs = 60_000) {
  return eventually(`${kind} ${name} to settle`, async () => {
    const body = (await api('GET', `/v0/${kind}/${name}`)).json();
    return body.status === 'DEPLOYING' ? undefined : body;
  }, timeoutMs);
}

const onRuntime = async (node: InProcessNode) => (await node.runtime.list()).map((sandbox) => sandbox.id);
const idOf = async (name: string) => (await t.app.pg.query<{ id: string }>(`SELECT id FROM resources WHERE workspace_id = $1 AND kind = 'sandboxes' AND name = $2`, [tenant.workspaceId, name])).rows[0].id;

test('a sandbox goes to the node with more free memory, never to a drained one, and says where it is', async () => {
  await weighDown(nodes.a);
  const first = await created('sandboxes', unique('roomy'), { runtime: { memory: 128 } });
  expect(first.status).toBe('DEPLOYED');
  expect(first.node).toBe(B);
  expect(await onRuntime(nodes.b)).toContain(await idOf(first.metadata.name));

  await setNodeDrained(t.app.pg, B, true);
  let second;
  try {
    second = await created('sandboxes', unique('drained'), { runtime: { memory: 128 } });
    expect(second.status).toBe('DEPLOYED');
    expect(second.node).toBe(A);
    expect(await onRuntime(nodes.a)).toContain(await idOf(second.metadata.name));
  } finally {
    await setNodeDrained(t.app.pg, B, false);
  }
  for (const name of [first.metadata.name, second.metadata.name]) expect((await api('DELETE', `/v0/sandboxes/${name}`)).statusCode).toBe(200);
  await liftAll();
});

test("a sandbox mounting a volume goes to the volume's node, even when the other has more free memory", async () => {
  await weighDown(nodes.a);
  const volume = await created('volumes', unique('vol'), { size: 8 });
  expect(volume.status).toBe('DEPLOYED');
  expect(volume.node).toBe(B);
  await liftAll();
  await weighDown(nodes.b);
  await weighDown(nodes.b);
  const mounting = await created('sandboxes', unique('mounts'), { runtime: { memory: 128 }, volumes: [{ name: volume.metadata.name, mountPath: '/data' }] });
  expect(mounting.status).toBe('DEPLOYED');
  expect(mounting.node).toBe(B);
  // The same free memory elsewhere takes a sandbox without a volume.
  const free = await created('sandboxes', unique('free'), { runtime: { memory: 128 } });
  expect(free.node).toBe(A);
  for (const name of [free.metadata.name, mounting.metadata.name]) expect((await api('DELETE', `/v0/sandboxes/${name}`)).statusCode).toBe(200);
  await liftAll();
});

test("a node LOST: its sandboxes FAILED with a Warning, billed to its last heartbeat; one deleted goes without it; its volume's sandboxes refused; back, it removes them", async () => {
  await weighDown(nodes.a);
  const kept = await created('sandboxes', unique('kept'), { runtime: { memory: 128 } });
  const dropped = await created('sandboxes', unique('dropped'), { runtime: { memory: 128 } });
  const going = await created('sandboxes', unique('going'), { runtime: { memory: 128 } });
  const volume = (await api('GET', `/v0/volumes`)).json().find((v: { node: string }) => v.node === B);
  expect([kept.node, dropped.node, going.node, volume?.node]).toEqual([B, B, B, B]);
  const ids = [await idOf(kept.metadata.name), await idOf(dropped.metadata.name), await idOf(going.metadata.name)];
  await liftAll();

  // Node b dies: its worker and heartbeat stop (its sandboxes' processes are left running, as
  // on a node cut off from the platform).
  const stopping = nodes.b.worker!.stop();
  nodes.b.worker = undefined;
  await stopping;
  // Deleted while its node is silent: its removal waits on the node, then goes on without it once the node is LOST.
  expect((await api('DELETE', `/v0/sandboxes/${going.metadata.name}`)).statusCode).toBe(200);

  const lost = await eventually('the sandbox to be written off', async () => {
    const body = (await api('GET', `/v0/sandboxes/${kept.metadata.name}`)).json();
    return body.status === 'FAILED' ? body : undefined;
  }, 60_000);
  expect(lost.node).toBe(B);
  const warning = lost.events.at(-1);
  expect(warning).toMatchObject({ type: 'Warning', status: 'FAILED' });
  expect(warning.message).toContain(`node '${B}' is LOST`);
  // Billing stops at the node's last heartbeat: the sandbox's state history ends there.
  const { rows: heard } = await t.app.pg.query<{ heartbeat_at: Date }>('SELECT heartbeat_at FROM nodes WHERE id = $1', [B]);
  const { rows: intervals } = await t.app.pg.query<{ ended_at: Date | null }>('SELECT ended_at FROM resource_state_intervals WHERE resource_uuid = $1 ORDER BY started_at DESC LIMIT 1', [ids[0]]);
  expect(intervals[0].ended_at?.getTime()).toBe(heard[0].heartbeat_at.getTime());

  await eventually('the sandbox being deleted to go without its node', async () => ((await api('GET', `/v0/sandboxes/${going.metadata.name}`)).statusCode === 404 ? true : undefined));
  // Deleted while its node is away: the record goes without the node.
  expect((await api('DELETE', `/v0/sandboxes/${dropped.metadata.name}`)).statusCode).toBe(200);
  await eventually('the lost sandbox to be deleted', async () => ((await api('GET', `/v0/sandboxes/${dropped.metadata.name}`)).statusCode === 404 ? true : undefined));

  // Its volume's node is not READY: a sandbox mounting it is refused, saying why.
  const refused = await created('sandboxes', unique('orphan'), { runtime: { memory: 128 }, volumes: [{ name: volume.metadata.name, mountPath: '/data' }] });
  expect(refused.status).toBe('FAILED');
  expect(refused.events.at(-1).message).toMatch(new RegExp(`volume '${volume.metadata.name}' is on node '${B}', which is LOST`));
  // Refused before it was placed, it is deleted without any node.
  expect(refused.node).toBeNull();
  expect((await api('DELETE', `/v0/sandboxes/${refused.metadata.name}`)).statusCode).toBe(200);
  await eventually('the refused sandbox to be deleted', async () => ((await api('GET', `/v0/sandboxes/${refused.metadata.name}`)).statusCode === 404 ? true : undefined));
  // Meanwhile new sandboxes go to node a.
  const meanwhile = await created('sandboxes', unique('meanwhile'), { runtime: { memory: 128 } });
  expect(meanwhile.node).toBe(A);

  // Back, node b removes all three before it takes work, and never starts them again.
  expect(await onRuntime(nodes.b)).toEqual(expect.arrayContaining(ids));
  await startNode(nodes.b);
  const after = await onRuntime(nodes.b);
  for (const id of ids) expect(after).not.toContain(id);
  const { rows: left } = await t.app.pg.query('SELECT 1 FROM abandoned_sandboxes WHERE node_id = $1', [B]);
  expect(left).toHaveLength(0);
  // Written off for good: it stays FAILED, on the node it was lost with.
  expect((await api('GET', `/v0/sandboxes/${kept.metadata.name}`)).json()).toMatchObject({ status: 'FAILED', node: B });
  expect((await api('DELETE', `/v0/sandboxes/${kept.metadata.name}`)).statusCode).toBe(200);
  await eventually('the lost sandbox to be deleted', async () => ((await api('GET', `/v0/sandboxes/${kept.metadata.name}`)).statusCode === 404 ? true : undefined));
  // The volume is back with its node: deleted there.
  expect((await api('DELETE', `/v0/volumes/${volume.metadata.name}`)).statusCode).toBe(200);
  await eventually('the volume to be deleted', async () => ((await api('GET', `/v0/volumes/${volume.metadata.name}`)).statusCode === 404 ? true : undefined), 60_000);

  // HANGAR_RECORD_HISTORIES=1: these runs become replay fixtures (test/unit/workflows/replay.test.ts).
  if (process.env.HANGAR_RECORD_HISTORIES) {
    await record('sandbox-placed-node-lost', sandboxWorkflowId(tenant.workspace, kept.metadata.name));
    await record('sandbox-placed-deleted-while-node-lost', sandboxWorkflowId(tenant.workspace, going.metadata.name));
    await record('volume-placed', volumeWorkflowId(tenant.workspace, volume.metadata.name));
  }
});

/** Writes the history of the ended workflow `workflowId` as a replay fixture named `name`. */
async function record(name: string, workflowId: string): Promise<void> {
  const handle = temporal.workflow.getHandle(workflowId);
  await handle.result();
  const history = proto.api.history.v1.History.toObject((await handle.fetchHistory()) as proto.api.history.v1.History, { longs: String, enums: String, bytes: String });
  fs.writeFileSync(path.join(repoRoot(), 'test', 'fixtures', 'workflow-histories', `${name}.json`), JSON.stringify(history));
}
