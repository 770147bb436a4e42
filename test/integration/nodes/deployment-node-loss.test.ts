import type { FastifyInstance } from 'fastify';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { deployFolder } from '../../../cli/deploy';
import { agentRequestWorkflowId } from '../../../domain/agents/async-requests';
import { nodeTaskQueue } from '../../../domain/config';
import { deploymentWorkflowId, revisionSandboxId } from '../../../domain/workloads/workload';
import { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import { repoRoot } from '../../../scripts/stack/binaries';
import { setNodeDrained } from '../../../store/nodes';
import { revisionNode } from '../../../store/resource-nodes';
import { startNodeLossWatch } from '../../../workers/singletons';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { deployTarget, startRunGateway, startSandboxPlatform, stopRuntimeTest, type SandboxPlatform } from '../../helpers/runtime-platform';
import { startSecondNode, type SecondNode } from '../../helpers/second-node';
import { eventually } from '../../helpers/workers';

/**
 * A deployment whose node is lost, on two hosts (helpers/second-node.ts): an agent with
 * `minScale: 1` placed on the second node (this host's node drained during its create) serves
 * through run_url; the second host dies (worker killed, network cut) while an async request is
 * in flight there; once the node is LOST the node-loss watch tells the deployment, whose workflow
 * moves the revision to this host's node and starts it there: run_url serves again, the async
 * request is run again there and completes, its callback POSTed once. The second host comes back:
 * its worker removes the stale instance before taking work, and only this host serves. An agent
 * with `minScale: 0` is moved at zero, and its next request starts it on this host.
 */
jest.setTimeout(300_000);

const LOST_AFTER_SECONDS = 8;
/** The agent answers a file of its bundle; a request whose query says `slow` after 6 s. */
const AGENT = `
const fs = require('fs');
require('http').createServer((q, s) => {
  const answer = () => s.end(JSON.stringify({ output: fs.readFileSync('/app/host.txt', 'utf8') }));
  if (q.url.includes('slow')) setTimeout(answer, 6000); else answer();
}).listen(process.env.PORT, process.env.HOST);`;

let t: TestApp;
let tenant: TestTenant;
let second: SecondNode;
let platform: SandboxPlatform;
let run: { gateway: FastifyInstance; runUrl: string };
let temporal: Client;
let callbacks: http.Server;
let callbackUrl: string;
const callbackBodies: string[] = [];
const watchId = unique('node-loss-watch');
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-dloss-'));

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('dloss'), nodeLostSeconds: LOST_AFTER_SECONDS });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  tenant = await createTenant(t.app.pg, 'dloss');
  second = await startSecondNode(t.config, t.app.pg);
  platform = await startSandboxPlatform(t, { network: undefined, warmPool: 0 });
  run = await startRunGateway(t.config);
  temporal = new Client({ connection: await Connection.connect({ address: t.config.temporalAddress }), namespace: t.config.temporalNamespace });
  await startNodeLossWatch(temporal, t.config.taskQueue, { workflowId: watchId, intervalMs: 500 });
  callbacks = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      callbackBodies.push(body);
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => callbacks.listen(0, '127.0.0.1', resolve));
  callbackUrl = `http://127.0.0.1:${(callbacks.address() as { port: number }).port}/done`;
  // Bundles are kept in the API's data folder; the second node sees the same folder, as a shared file system would give it.
  fs.mkdirSync(path.join(t.config.dataDir, 'bundles'), { recursive: true });
  fs.symlinkSync(path.join(t.config.dataDir, 'bundles'), path.join(second.dataDir, 'bundles'));
}, 240_000);

afterAll(async () => {
  await temporal?.workflow.getHandle(watchId).terminate('test over').catch(() => undefined);
  await temporal?.connection.close();
  await new Promise((resolve) => callbacks?.close(resolve));
  await run?.gateway.close();
  await stopRuntimeTest({ ...platform, t });
  await second?.stop({ kill: true });
  fs.rmSync(scratch, { recursive: true, force: true });
}, 120_000);

const ask = (rest = '') => fetch(`${run.runUrl}/${tenant.workspace}/agents/mover${rest}`, { method: 'POST', headers: { authorization: `Bearer ${tenant.admin.apiKey}`, 'content-type': 'application/json' }, body: '{}' });
/** The workload instances a node's runtime runs. */
async function instancesOn(dataDir: string): Promise<string[]> {
  const runtime = new BwrapRuntime({ dataDir, warmPool: 0 });
  try {
    return (await runtime.list()).map((sandbox) => sandbox.id).filter((id) => id.startsWith('wl-'));
  } finally {
    await runtime.close();
  }
}

/**
 * Deploys agent `name` (answering `content`) with `minScale`, placed on the second node (this
 * host drained for the deploy); answers its id and its revision 1 instance.
 */
async function deployOnSecondNode(name: string, minScale: number, content: string): Promise<{ id: string; instance: string }> {
  const dir = path.join(scratch, name);
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'hangar.json'), JSON.stringify({ kind: 'agents', name, spec: { runtime: { memory: 256, minScale } } }));
  fs.writeFileSync(path.join(dir, 'main.js'), AGENT);
  fs.writeFileSync(path.join(dir, 'host.txt'), content);
  await setNodeDrained(t.app.pg, t.config.nodeId, true);
  try {
    const deployed = await deployFolder(dir, deployTarget(t, tenant));
    if (deployed.status !== 'DEPLOYED') throw new Error(`the agent is ${deployed.status}: ${JSON.stringify(deployed.events)}\n${second.log()}`);
  } finally {
    await setNodeDrained(t.app.pg, t.config.nodeId, false);
  }
  const id = await tenantResources(t, tenant).idOf('agents', name);
  expect(await revisionNode(t.app.pg, id, 1)).toBe(second.id);
  return { id, instance: revisionSandboxId(id, 1) };
}

test('an agent whose node is lost serves again from another node; its request in flight completes, its callback once; the node back runs nothing of it', async () => {
  const { id, instance } = await deployOnSecondNode('mover', 1, 'bundle');
  expect(await instancesOn(second.dataDir)).toEqual([instance]);
  expect(await instancesOn(t.config.dataDir)).toEqual([]);
  const first = await ask();
  expect([first.status, await first.json()]).toEqual([200, { output: 'bundle' }]);

  // An async request in flight on the second node when it dies.
  const accepted = await fetch(`${run.runUrl}/${tenant.workspace}/agents/mover?async=true&slow=1`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.admin.apiKey}`, 'content-type': 'application/json', 'x-service-callback-url': callbackUrl },
    body: '{}',
  });
  expect(accepted.status).toBe(202);
  const { id: requestId } = (await accepted.json()) as { id: string };
  await eventually('the request running', async () => {
    const { rows } = await t.app.pg.query<{ status: string }>('SELECT status FROM agent_requests WHERE id = $1', [requestId]);
    return rows[0]?.status === 'running' ? true : undefined;
  });
  await second.crash();

  // Once the node is LOST, the revision moves here and serves again through run_url. (Both hosts
  // are this machine: the dead host's instance, still running, is not what is checked.)
  const servingHere = async () => {
    const { rows } = await t.app.pg.query<{ socket: string }>(`SELECT state #>> '{serving,socketPath}' AS socket FROM resources WHERE id = $1`, [id]);
    return rows[0]?.socket?.startsWith(t.config.dataDir) && (await instancesOn(t.config.dataDir)).includes(instance) ? true : undefined;
  };
  await eventually('the agent started on this host', servingHere, LOST_AFTER_SECONDS * 1000 + 90_000);
  expect(await revisionNode(t.app.pg, id, 1)).toBe(t.config.nodeId);
  expect(await instancesOn(t.config.dataDir)).toEqual([instance]);
  await eventually('the agent serving from this host', async () => ((await ask()).status === 200 ? true : undefined));
  const again = await ask();
  expect([again.status, await again.json()]).toEqual([200, { output: 'bundle' }]);

  const done = await eventually('the async request and its callback', async () => {
    const view = (await (await fetch(`${run.runUrl}/${tenant.workspace}/agents/mover/requests/${requestId}`, { headers: { authorization: `Bearer ${tenant.admin.apiKey}` } })).json()) as {
      status: string;
      result: unknown;
      callback: { status: string } | null;
    };
    return view.callback?.status === 'delivered' || view.callback?.status === 'failed' ? view : undefined;
  }, 180_000);
  expect(done).toMatchObject({ status: 'succeeded', result: { statusCode: 200, body: '{"output":"bundle"}' }, callback: { status: 'delivered' } });
  expect(callbackBodies).toHaveLength(1);
  expect(JSON.parse(callbackBodies[0])).toMatchObject({ id: requestId, status: 'succeeded' });
  // The call was tried on the lost node, then on this one, whence the callback left.
  const events = (await temporal.workflow.getHandle(agentRequestWorkflowId(tenant.workspace, 'mover', requestId)).fetchHistory()).events ?? [];
  const scheduled = events.flatMap((event) => {
    const attributes = event.activityTaskScheduledEventAttributes;
    return attributes ? [[attributes.activityType?.name, attributes.taskQueue?.name]] : [];
  });
  const queueOf = (nodeId: string) => nodeTaskQueue({ taskQueue: t.config.taskQueue, nodeId });
  expect(scheduled.filter(([name]) => name === 'callAgent')[0]).toEqual(['callAgent', queueOf(second.id)]);
  expect(scheduled.filter(([name]) => name === 'callAgent').at(-1)).toEqual(['callAgent', queueOf(t.config.nodeId)]);
  expect(scheduled.filter(([name]) => name === 'deliverAgentRequestCallback')).toEqual([['deliverAgentRequestCallback', queueOf(t.config.nodeId)]]);

  // The second host comes back: its worker removes the instance of the moved revision before it takes work.
  expect(await instancesOn(second.dataDir)).toEqual([instance]);
  await second.restart();
  expect(await instancesOn(second.dataDir)).toEqual([]);
  expect(await instancesOn(t.config.dataDir)).toEqual([instance]);
  expect(await revisionNode(t.app.pg, id, 1)).toBe(t.config.nodeId);
  expect((await ask()).status).toBe(200);
  expect(callbackBodies).toHaveLength(1);

  // HANGAR_RECORD_HISTORIES=1: these runs become replay fixtures (test/unit/workflows/replay.test.ts).
  if (process.env.HANGAR_RECORD_HISTORIES) {
    await record('agent-request-node-lost', agentRequestWorkflowId(tenant.workspace, 'mover', requestId), true);
    expect((await tenantResources(t, tenant).api('DELETE', '/v0/agents/mover')).statusCode).toBe(200);
    await record('deployment-placed-node-lost', deploymentWorkflowId(tenant.workspace, 'agents', 'mover'), true);
  }
});

test('an agent with minScale 0 whose node is lost is at zero, and its next request starts it on another node', async () => {
  const { id, instance } = await deployOnSecondNode('sleeper', 0, 'sleeper');
  const askSleeper = () => fetch(`${run.runUrl}/${tenant.workspace}/agents/sleeper`, { method: 'POST', headers: { authorization: `Bearer ${tenant.admin.apiKey}`, 'content-type': 'application/json' }, body: '{}' });
  expect((await askSleeper()).status).toBe(200);

  await second.crash();
  // Moved, and at zero: nothing of it runs here until a request comes.
  const scale = async () => (await t.app.pg.query<{ scale: string | null }>(`SELECT state ->> 'scale' AS scale FROM resources WHERE id = $1`, [id])).rows[0]?.scale;
  await eventually('the agent moved and at zero', async () => ((await revisionNode(t.app.pg, id, 1)) === t.config.nodeId && (await scale()) === 'SCALED_TO_ZERO' ? true : undefined), LOST_AFTER_SECONDS * 1000 + 90_000);
  expect((await instancesOn(t.config.dataDir)).filter((name) => name === instance)).toEqual([]);
  const woken = await askSleeper();
  expect([woken.status, await woken.json()]).toEqual([200, { output: 'sleeper' }]);
  expect(await scale()).toBe('RUNNING');
  expect((await instancesOn(t.config.dataDir)).filter((name) => name === instance)).toEqual([instance]);

  await second.restart();
  expect((await instancesOn(second.dataDir)).filter((name) => name === instance)).toEqual([]);
  // Served from this host's instance (the wake recorded its socket), not from the one the node back removed.
  const last = await askSleeper();
  expect([last.status, await last.json()]).toEqual([200, { output: 'sleeper' }]);

  if (process.env.HANGAR_RECORD_HISTORIES) {
    expect((await tenantResources(t, tenant).api('DELETE', '/v0/agents/sleeper')).statusCode).toBe(200);
    await record('deployment-at-zero-node-lost', deploymentWorkflowId(tenant.workspace, 'agents', 'sleeper'), true);
  }
});

/** Writes the history of the workflow `workflowId` (once ended, when `ended`) as a replay fixture named `name`. */
async function record(name: string, workflowId: string, ended: boolean): Promise<void> {
  const handle = temporal.workflow.getHandle(workflowId);
  if (ended) await handle.result();
  const history = proto.api.history.v1.History.toObject((await handle.fetchHistory()) as proto.api.history.v1.History, { longs: String, enums: String, bytes: String });
  fs.writeFileSync(path.join(repoRoot(), 'test', 'fixtures', 'workflow-histories', `${name}.json`), JSON.stringify(history));
}
