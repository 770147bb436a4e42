import type { FastifyInstance } from 'fastify';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { deployFolder } from '../../../cli/deploy';
import { agentRequestWorkflowId } from '../../../domain/agents/async-requests';
import { nodeTaskQueue } from '../../../domain/config';
import { nodeCredentialKey, NODE_CREDENTIAL_HEADER, signNodeRequest } from '../../../domain/nodes/node-credential';
import { NODE_THAWED_HEADER } from '../../../domain/nodes/listener-paths';
import { renderSandboxUrl } from '../../../domain/sandbox/url-template';
import { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import { NodeListenerAddresses } from '../../../runtime/network/node-listener-addresses';
import type { SandboxNetwork } from '../../../runtime/network/sandbox-network';
import { loadMasterKey } from '../../../store/master-key';
import { setNodeDrained } from '../../../store/nodes';
import { moveResourceNode, revisionNode } from '../../../store/resource-nodes';
import { announceRouteChanges } from '../../../store/route-notices';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { deployTarget, startRunGateway, startSandboxPlatform, stopRuntimeTest, type SandboxPlatform } from '../../helpers/runtime-platform';
import { exec, runtimeDataDir, sandboxSpec, testRuntime } from '../../helpers/sandbox-runtime';
import { startSecondNode, type SecondNode } from '../../helpers/second-node';
import { testSandboxNetwork } from '../../helpers/test-internet';
import { openWebSocket, textFrame } from '../../helpers/websocket';
import { eventually } from '../../helpers/workers';

/**
 * Two hosts on one machine: this process is the platform's host (API, gateways, control worker,
 * node 'local'), and a second node worker runs in a network namespace of its own
 * (helpers/second-node.ts). A sandbox and an agent whose node is the second one (each placed
 * there by its workflow while this host's node is drained) are reached
 * through the gateways of this host over the second node's listener, for every kind of call;
 * the listener refuses requests without the platform's credential; a sandbox of this host is
 * refused the listener's address.
 */
jest.setTimeout(240_000);

let t: TestApp;
let t2: TestApp;
let tenant: TestTenant;
let second: SecondNode;
let platform: SandboxPlatform;
let run: { gateway: FastifyInstance; runUrl: string };
let gatewayUrl: string;
let remoteId: string;
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-route-'));

const PORT = 8711;
const SERVER = `require('http').createServer((q, s) => s.end('port ' + q.url)).listen(${PORT}, '127.0.0.1')`;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('route') });
  tenant = await createTenant(t.app.pg, 'route');
  second = await startSecondNode(t.config, t.app.pg);
  // The API as configured on the second node: what it creates runs on that node's task queue.
  t2 = await startTestApp({ taskQueue: t.config.taskQueue, nodeId: second.id });
  await t2.app.listen({ host: '127.0.0.1', port: 0 });
  platform = await startSandboxPlatform(t, { network: undefined, warmPool: 0 });
  gatewayUrl = await platform.gateway.listen({ host: '127.0.0.1', port: 0 });
  run = await startRunGateway(t.config);

  // Placed by its workflow: with this host's node drained, on the second one.
  await setNodeDrained(t.app.pg, t.config.nodeId, true);
  try {
    const created = await tenantResources(t2, tenant).api('POST', '/v0/sandboxes', { metadata: { name: 'remote' }, spec: { runtime: { memory: 256 } } });
    expect(created.statusCode).toBe(200);
    remoteId = await tenantResources(t, tenant).idOf('sandboxes', 'remote');
    const deployed = await tenantResources(t, tenant).status('sandboxes', 'remote', 'DEPLOYED', 90_000);
    expect(deployed.node).toBe(second.id);
  } finally {
    await setNodeDrained(t.app.pg, t.config.nodeId, false);
  }
}, 240_000);

afterAll(async () => {
  await run?.gateway.close();
  await stopRuntimeTest({ ...platform, t });
  await t2?.close();
  await second?.stop();
  fs.rmSync(scratch, { recursive: true, force: true });
}, 120_000);

const sandboxBase = (name: string) => new URL(renderSandboxUrl(t.config.sandboxUrlTemplate, { workspace_id: tenant.workspace, sandbox_id: name, region: t.config.region }));
const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', rest: string, payload?: object) => tenantResources(t, tenant).sandboxCall(platform.gateway, 'remote', method, rest, payload);
const onSecondNode = (...parts: string[]) => path.join(second.dataDir, 'sandboxes', remoteId, ...parts);

test('the sandbox runs on the second node, and exec, files and processes reach it through the gateway', async () => {
  expect(fs.existsSync(onSecondNode('api'))).toBe(true);
  expect(fs.existsSync(path.join(t.config.dataDir, 'sandboxes', remoteId))).toBe(false);

  const ran = await call('POST', '/process', { command: 'echo from-$(hostname); echo $((6*7)) > /workspace/answer', waitForCompletion: true });
  expect(ran.statusCode).toBe(200);
  expect(ran.json()).toMatchObject({ status: 'completed', exitCode: 0 });
  expect(fs.readFileSync(onSecondNode('fs', 'workspace', 'answer'), 'utf8')).toBe('42\n');

  expect((await call('PUT', '/filesystem/workspace/note.txt', { content: 'over the listener' })).statusCode).toBe(200);
  expect(fs.readFileSync(onSecondNode('fs', 'workspace', 'note.txt'), 'utf8')).toBe('over the listener');
  expect((await call('GET', '/filesystem/workspace/note.txt')).json()).toMatchObject({ content: 'over the listener' });

  expect((await call('POST', '/process', { name: 'server', command: `node -e "${SERVER}"`, waitForPorts: [PORT] })).statusCode).toBe(200);
  expect((await call('GET', '/process/server')).json()).toMatchObject({ name: 'server', status: 'running' });
  const port = await call('GET', `/port/${PORT}/hello?x=1`);
  expect([port.statusCode, port.body]).toEqual([200, 'port /hello?x=1']);
});

test('a WebSocket (the terminal) is relayed to the sandbox on the second node', async () => {
  const base = sandboxBase('remote');
  const opening = await openWebSocket(`${gatewayUrl}${base.pathname}/terminal/ws`, { host: base.host, authorization: `Bearer ${tenant.admin.apiKey}` });
  if (!opening.upgraded) throw new Error(`not upgraded: ${opening.status} ${opening.body}`);
  let shown = '';
  opening.socket.on('data', (chunk: Buffer) => (shown += chunk.toString('latin1')));
  opening.socket.write(textFrame(JSON.stringify({ type: 'input', data: 'echo $((6*7))remote\n' })));
  await eventually('the terminal output', async () => (shown.includes('42remote') ? true : undefined), 20_000);
  opening.socket.destroy();
});

test('a public preview of a port of the remote sandbox answers through the preview host', async () => {
  const preview = await tenantResources(t, tenant).api('POST', '/v0/sandboxes/remote/previews', { metadata: { name: 'web' }, spec: { port: PORT, public: true } });
  expect(preview.statusCode).toBe(200);
  const url = new URL(preview.json().spec.url);
  const answer = await platform.gateway.inject({ method: 'GET', url: `${url.pathname}/page`, headers: { host: url.host } });
  expect([answer.statusCode, answer.body]).toEqual([200, 'port /page']);
});

test('a sandbox of the second node in standby is thawed through its listener by the next request', async () => {
  // The second node's runtime, as its standby check freezes a sandbox.
  const runtime = new BwrapRuntime({ dataDir: second.dataDir, warmPool: 0 });
  try {
    expect((await call('PUT', '/filesystem/workspace/standby.txt', { content: 'before standby' })).statusCode).toBe(200);
    await runtime.freeze(remoteId);
    expect(await runtime.isFrozen(remoteId)).toBe(true);
    const answer = await call('GET', '/filesystem/workspace/standby.txt');
    expect([answer.statusCode, answer.json().content]).toEqual([200, 'before standby']);
    expect(await runtime.isFrozen(remoteId)).toBe(false);
    // The listener's report of the thaw is for the gateway (which tells the workflow), not the caller.
    expect(answer.headers[NODE_THAWED_HEADER]).toBeUndefined();
  } finally {
    await runtime.close();
  }
});

test('a sandbox moved to another node is looked up again at once: the gateway follows the move', async () => {
  // Moved (as node loss would) to this host's node, where it does not run: the gateway tries here.
  await moveResourceNode(t.app.pg, remoteId, second.id, t.config.nodeId);
  await eventually('the gateway routing to the local node', async () => ((await call('GET', '/filesystem/workspace/note.txt')).statusCode === 502 ? true : undefined), 10_000);
  await moveResourceNode(t.app.pg, remoteId, t.config.nodeId, second.id);
  await eventually('the gateway routing to the second node again', async () => ((await call('GET', '/filesystem/workspace/note.txt')).statusCode === 200 ? true : undefined), 10_000);
});

test("an agent on the second node answers through the run gateway, over the second node's listener", async () => {
  const dir = path.join(scratch, 'agent');
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'hangar.json'), JSON.stringify({ kind: 'agents', name: 'far', spec: { runtime: { memory: 256 } } }));
  fs.writeFileSync(path.join(dir, 'main.js'), `require('http').createServer((q, s) => s.end(JSON.stringify({ output: require('fs').existsSync('/run/hangar-api') }))).listen(process.env.PORT, process.env.HOST);`);
  // Bundles are kept in the API's data folder; how they reach another host is not routing's part:
  // here the second node sees the same folder, as a shared file system would give it.
  fs.mkdirSync(path.join(t.config.dataDir, 'bundles'), { recursive: true });
  fs.symlinkSync(path.join(t.config.dataDir, 'bundles'), path.join(second.dataDir, 'bundles'));
  // Placed by its deployment workflow: with this host's node drained, on the second one.
  await setNodeDrained(t.app.pg, t.config.nodeId, true);
  try {
    const deployed = await deployFolder(dir, deployTarget(t2, tenant));
    if (deployed.status !== 'DEPLOYED') throw new Error(`the agent is ${deployed.status}: ${JSON.stringify(deployed.events)}\n${second.log()}`);
  } finally {
    await setNodeDrained(t.app.pg, t.config.nodeId, false);
  }
  const id = await tenantResources(t, tenant).idOf('agents', 'far');
  expect(await revisionNode(t.app.pg, id, 1)).toBe(second.id);
  expect(fs.readdirSync(path.join(second.dataDir, 'workload-sockets')).some((name) => name.endsWith('.sock'))).toBe(true);
  const ask = () => fetch(`${run.runUrl}/${tenant.workspace}/agents/far`, { method: 'POST', headers: { authorization: `Bearer ${tenant.admin.apiKey}`, 'content-type': 'application/json' }, body: '{}' });
  const answer = await ask();
  expect(answer.status).toBe(200);
  expect(await answer.json()).toEqual({ output: true });

  // The route follows the revision's node: on a node without a listener it is a 502 naming it,
  // although the instance's socket is on this machine's disk (so the 200 above came through the listener).
  await t.app.pg.query('UPDATE workload_revisions SET node_id = $2 WHERE resource_id = $1', [id, 'nowhere']);
  await announceRouteChanges(t.app.pg, id);
  // The notice reaches the gateway a moment after the commit.
  const lost = await eventually('the gateway routing to the node without a listener', async () => {
    const answer = await ask();
    return answer.status === 502 ? ((await answer.json()) as { error: string }) : undefined;
  }, 10_000);
  expect(lost.error).toBe('node_unreachable');
  await t.app.pg.query('UPDATE workload_revisions SET node_id = $2 WHERE resource_id = $1', [id, second.id]);
  await announceRouteChanges(t.app.pg, id);
  await eventually('the gateway routing to the second node again', async () => ((await ask()).status === 200 ? true : undefined), 10_000);

  // An asynchronous request is run by the node the revision runs on: its activity on that node's queue.
  const accepted = await fetch(`${run.runUrl}/${tenant.workspace}/agents/far?async=true`, { method: 'POST', headers: { authorization: `Bearer ${tenant.admin.apiKey}`, 'content-type': 'application/json' }, body: '{}' });
  expect(accepted.status).toBe(202);
  const { id: requestId } = (await accepted.json()) as { id: string };
  const done = await eventually('the asynchronous request', async () => {
    const view = (await (await fetch(`${run.runUrl}/${tenant.workspace}/agents/far/requests/${requestId}`, { headers: { authorization: `Bearer ${tenant.admin.apiKey}` } })).json()) as { status: string; result: unknown };
    return view.status === 'succeeded' || view.status === 'failed' ? view : undefined;
  });
  expect(done).toMatchObject({ status: 'succeeded', result: { statusCode: 200, body: '{"output":true}' } });
  const history = await t.app.temporal.workflow.getHandle(agentRequestWorkflowId(tenant.workspace, 'far', requestId)).fetchHistory();
  const queues = (history.events ?? []).map((event) => event.activityTaskScheduledEventAttributes?.taskQueue?.name).filter((name) => name?.includes('-node-'));
  expect(new Set(queues)).toEqual(new Set([nodeTaskQueue({ taskQueue: t.config.taskQueue, nodeId: second.id })]));
});

/** A request straight to the second node's listener. */
function toListener(method: string, listenerPath: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(`${second.listenerUrl}${listenerPath}`, { method, headers }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    request.on('error', reject);
    request.end();
  });
}

test("the listener refuses a missing, forged, expired or another node's credential, and forwards nothing then", async () => {
  const key = nodeCredentialKey(loadMasterKey(t.config));
  const target = `/sandboxes/${remoteId}/api/filesystem/workspace/note.txt`;
  const signed = (nodeId: string, method: string, p: string, at = Date.now()) => ({ [NODE_CREDENTIAL_HEADER]: signNodeRequest(key, nodeId, method, p, at) });
  expect((await toListener('GET', target)).status).toBe(401);
  expect((await toListener('GET', target, { authorization: `Bearer ${tenant.admin.apiKey}` })).status).toBe(401);
  const refused = [
    await toListener('GET', target, { [NODE_CREDENTIAL_HEADER]: 'v1.9999999999.AAAA' }),
    await toListener('GET', target, { [NODE_CREDENTIAL_HEADER]: signNodeRequest(nodeCredentialKey(Buffer.alloc(32, 7)), second.id, 'GET', target) }),
    await toListener('GET', target, signed('local', 'GET', target)),
    await toListener('GET', target, signed(second.id, 'DELETE', target)),
    await toListener('GET', target, signed(second.id, 'GET', `/sandboxes/${remoteId}/api/filesystem/workspace`)),
    await toListener('GET', target, signed(second.id, 'GET', target, Date.now() - 120_000)),
  ];
  expect(refused.map((r) => [r.status, JSON.parse(r.body).error])).toEqual(Array(6).fill([403, 'node_credential_refused']));
  // The same request with the platform's credential passes, and the file was never deleted.
  const good = await toListener('GET', target, signed(second.id, 'GET', target));
  expect([good.status, JSON.parse(good.body).content]).toEqual([200, 'over the listener']);
  const ws = await openWebSocket(`${second.listenerUrl}/sandboxes/${remoteId}/api/terminal/ws`);
  expect(ws.upgraded ? 'upgraded' : ws.status).toBe(401);
});

describe('a sandbox of this host', () => {
  const dataDir = runtimeDataDir('route-egress');
  let network: SandboxNetwork;
  let runtime: BwrapRuntime;
  let listeners: NodeListenerAddresses;

  afterAll(async () => {
    for (const sandbox of (await runtime?.list()) ?? []) await runtime.remove(sandbox.id);
    await runtime?.close();
    await network?.tearDown();
    listeners?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test("cannot reach the second node's listener, by address or by name, through the proxy or transparently", async () => {
    listeners = new NodeListenerAddresses(t.app.pg);
    await listeners.start();
    network = testSandboxNetwork(dataDir, () => ({ 'node2.test': [second.address] }), { nodeListeners: () => listeners.blocks() });
    await network.start();
    runtime = testRuntime(dataDir, { network, warmPool: 0 });
    const box = await runtime.start(sandboxSpec({ network: {} }));
    const curl = async (args: string) => (await exec(box.socketPath, `curl -sS --max-time 20 ${args}`)).stdout;
    const rule = new RegExp(`${second.address.replace(/\./g, '\\.')}/32 is never reachable from a sandbox`);
    expect(await curl(`${second.listenerUrl}/sandboxes/${remoteId}/frozen`)).toMatch(rule);
    expect(await curl(`http://node2.test:${second.listenPort}/`)).toMatch(rule);
    expect(await curl(`--noproxy '*' http://${second.address}/`)).toMatch(rule);
  });
});

