import net from 'node:net';
import os from 'node:os';
import type { Pool } from 'pg';
import { nodeTaskQueue } from '../../../domain/config';
import { NodeHeartbeat, type NodeHeartbeatOptions } from '../../../runtime/node-heartbeat';
import { createPool } from '../../../store/postgres-pool';
import { addIdentity, createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { runtimeDataDir, sandboxSpec, testRuntime, until } from '../../helpers/sandbox-runtime';

/**
 * Nodes as the platform knows them: a node worker's heartbeat (the real one, reporting a real
 * runtime's sandboxes to the real database) registers it with its capacity and load; silent, it
 * turns UNREACHABLE after 10 s, then LOST; a database outage only delays its reports; the
 * operator drains it through the API (as `hangar node drain` does, tested in test/integration/cli),
 * and the drain outlives the worker's restart.
 */
jest.setTimeout(120_000);

const LOST_AFTER_SECONDS = 12;
let t: TestApp;
let tenant: TestTenant;
const heartbeats: NodeHeartbeat[] = [];
const pools: Pool[] = [];
const relays: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  t = await startTestApp({ nodeLostSeconds: LOST_AFTER_SECONDS });
  tenant = await createTenant(t.app.pg, 'nodes');
});

afterAll(async () => {
  await Promise.all(heartbeats.map((heartbeat) => heartbeat.stop()));
  await Promise.all(pools.map((pool) => pool.end()));
  await Promise.all(relays.map((relay) => relay.close()));
  await t?.close();
});

async function getNodes(apiKey = tenant.admin.apiKey) {
  return t.call(apiKey, { method: 'GET', url: '/v0/nodes' });
}

async function nodeNamed(id: string) {
  const res = await t.call(tenant.admin.apiKey, { method: 'GET', url: `/v0/nodes/${id}` });
  expect(res.statusCode).toBe(200);
  return res.json();
}

function startHeartbeat(id: string, pg: Pool, sandboxes: NodeHeartbeatOptions['sandboxes'] = async () => [], log?: (line: string) => void): NodeHeartbeat {
  const heartbeat = new NodeHeartbeat({ pg, id, taskQueue: nodeTaskQueue({ ...t.config, nodeId: id }), region: 'eu-test', labels: { zone: 'a' }, dataDir: t.config.dataDir, sandboxes, log });
  heartbeats.push(heartbeat);
  return heartbeat;
}

test("a node registers with its capacity and its runtime's load; only account admins see it", async () => {
  const dataDir = runtimeDataDir('node-registry');
  const runtime = testRuntime(dataDir);
  const id = unique('node');
  try {
    await runtime.start(sandboxSpec({ memoryMb: 192 }));
    await startHeartbeat(id, t.app.pg, () => runtime.list()).start();
    const node = await nodeNamed(id);
    expect(node).toMatchObject({
      id,
      state: 'READY',
      drained: false,
      region: 'eu-test',
      labels: { zone: 'a' },
      taskQueue: `${t.config.taskQueue}-node-${id}`,
      capacity: { memoryBytes: os.totalmem(), cpus: os.availableParallelism() },
      load: { sandboxes: 1, memoryCommittedBytes: 192 * 2 ** 20, memoryFreeBytes: os.totalmem() - 192 * 2 ** 20 },
    });
    expect(node.capacity.diskBytes).toBeGreaterThan(node.load.diskFreeBytes);
    expect((await getNodes()).json().map((listed: { id: string }) => listed.id)).toContain(id);

    const member = await addIdentity(t.app.pg, { accountId: tenant.accountId, workspaceId: tenant.workspaceId, role: 'admin', name: 'workspace-admin' });
    const refused = await getNodes(member.apiKey);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().message).toContain('account admin');
    expect((await t.call(tenant.admin.apiKey, { method: 'GET', url: `/v0/nodes/${unique('none')}` })).statusCode).toBe(404);
  } finally {
    for (const sandbox of await runtime.list()) await runtime.remove(sandbox.id);
    await runtime.close();
  }
});

test('a silent node turns UNREACHABLE after 10 s, then LOST; reporting again, it is READY', async () => {
  const id = unique('node');
  const heartbeat = startHeartbeat(id, t.app.pg);
  await heartbeat.start();
  expect((await nodeNamed(id)).state).toBe('READY');
  await heartbeat.stop();
  await until('the node UNREACHABLE', async () => (await nodeNamed(id)).state === 'UNREACHABLE', 20_000);
  await until('the node LOST', async () => (await nodeNamed(id)).state === 'LOST', 20_000);
  await startHeartbeat(id, t.app.pg).start();
  expect((await nodeNamed(id)).state).toBe('READY');
});

test('while the database is unreachable the reports fail (said once), and they resume when it is back', async () => {
  const target = new URL(t.config.databaseUrl!);
  const relay = await startTcpRelay(Number(target.port), target.hostname);
  const viaRelay = new URL(target.href);
  viaRelay.port = String(relay.port);
  const pool = createPool(viaRelay.href, 1);
  pools.push(pool);
  const lines: string[] = [];
  const id = unique('node');
  await startHeartbeat(id, pool, undefined, (line) => lines.push(line)).start();

  await relay.down();
  await until('the outage told', () => lines.some((line) => line.startsWith('node heartbeat: could not report')), 20_000);
  await until('the node silent', async () => (await nodeNamed(id)).state === 'UNREACHABLE', 30_000);
  await relay.up();
  await until('the node READY again', async () => (await nodeNamed(id)).state === 'READY', 30_000);
  // The line is written once the report that succeeded has returned, a moment after its row.
  await until('the return told', () => lines.includes('node heartbeat: reporting again'), 20_000);
  expect(lines.filter((line) => line.startsWith('node heartbeat: could not report'))).toHaveLength(1);
});

test("the operator drains a node through the API; the drain outlives its restart and can be lifted", async () => {
  const id = unique('node');
  await startHeartbeat(id, t.app.pg).start();
  const post = (verb: string, nodeId = id, apiKey = tenant.admin.apiKey) => t.call(apiKey, { method: 'POST', url: `/v0/nodes/${nodeId}/${verb}` });

  const drained = await post('drain');
  expect(drained.statusCode).toBe(200);
  expect(drained.json()).toMatchObject({ id, drained: true, state: 'READY', drainedAt: expect.any(String) });
  // Draining again keeps the first drain's time.
  expect((await post('drain')).json().drainedAt).toBe(drained.json().drainedAt);
  await startHeartbeat(id, t.app.pg).start();
  expect(await nodeNamed(id)).toMatchObject({ drained: true, drainedAt: drained.json().drainedAt });

  const lifted = await post('undrain');
  expect(lifted.statusCode).toBe(200);
  expect(lifted.json().drained).toBe(false);
  expect(lifted.json().drainedAt).toBeUndefined();
  expect((await nodeNamed(id)).drained).toBe(false);

  const unknown = await post('drain', 'no-such-node');
  expect(unknown.statusCode).toBe(404);
  expect(unknown.json().message).toContain("node 'no-such-node' not found");
  const member = await addIdentity(t.app.pg, { accountId: tenant.accountId, workspaceId: tenant.workspaceId, role: 'admin', name: 'drain-member' });
  const refused = await post('drain', id, member.apiKey);
  expect(refused.statusCode).toBe(403);
  expect(refused.json().message).toContain('account admin');
  expect((await nodeNamed(id)).drained).toBe(false);
});

/** A TCP relay to the database that can be cut (every connection closed, new ones refused) and restored on the same port. */
async function startTcpRelay(targetPort: number, targetHost: string) {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;
  const up = () =>
    new Promise<void>((resolve) => {
      server = net.createServer((client) => {
        const upstream = net.connect(targetPort, targetHost);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => undefined);
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, '127.0.0.1', () => {
        port = (server!.address() as net.AddressInfo).port;
        resolve();
      });
    });
  const down = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server!.close(() => resolve());
    });
  await up();
  const relay = {
    get port() {
      return port;
    },
    up,
    down,
    close: async () => {
      if (server?.listening) await down();
    },
  };
  relays.push(relay);
  return relay;
}
