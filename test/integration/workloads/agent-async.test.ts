import type { FastifyInstance } from 'fastify';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { deployFolder } from '../../../cli/deploy';
import { agentRequestWorkflowId, asyncRequestUsageTick } from '../../../domain/agents/async-requests';
import { meterEventId } from '../../../domain/billing/metering';
import { CALLBACK_SIGNATURE_HEADER, CALLBACK_TIMESTAMP_HEADER, verifyCallback } from '../../../domain/callback-signature';
import { captureLogs } from '../../helpers/log-capture';
import { addIdentity, createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { testRuntime } from '../../helpers/sandbox-runtime';
import { eventually, startControlWorker, startNodeWorker, type RunningWorker } from '../../helpers/workers';
import { deployTarget, startWorkloadPlatform, stopRuntimeTest } from '../../helpers/runtime-platform';
import { outboxEvents } from '../../helpers/usage-outbox';
import { repoRoot } from '../../../scripts/stack/binaries';

// Async agent requests end to end: the example echo agent and a slow agent deployed from code
// bundles, the run gateway, the control and node workers, and callback targets on this host.
jest.setTimeout(60_000);

const EXAMPLES = path.join(repoRoot(), 'examples');
// Short, so that giving a callback up is seen within a test (first retry after 1 s, then 2 s).
const GIVE_UP_SECONDS = 4;

// An agent that takes `delayMs` to answer, with `status`, or `big` bytes of text; it counts the
// calls it got per Idempotency-Key, so a test sees a request sent again, and per input, which a
// request `{"peek": input}` answers at once (so a test knows the agent has a request in hand).
const SLOW_AGENT = `
const calls = {};
const received = {};
require('http').createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const input = JSON.parse(Buffer.concat(chunks).toString() || '{}');
    if (input.peek !== undefined) { res.writeHead(200, { 'content-type': 'application/json' }); return res.end(JSON.stringify({ received: received[input.peek] || 0 })); }
    received[input.inputs] = (received[input.inputs] || 0) + 1;
    const key = req.headers['idempotency-key'] || '';
    calls[key] = (calls[key] || 0) + 1;
    setTimeout(() => {
      if (input.big) { res.writeHead(200, { 'content-type': 'text/plain' }); return res.end('x'.repeat(input.big)); }
      res.writeHead(input.status || 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ output: 'slow: ' + input.inputs, calls: calls[key], url: req.url, contentType: req.headers['content-type'] }));
    }, input.delayMs || 0);
  });
}).listen(process.env.PORT, process.env.HOST);
`;

let t: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let gateway: FastifyInstance;
let runUrl: string;
let control: RunningWorker | undefined;
let node: RunningWorker | undefined;
let runtime: ReturnType<typeof testRuntime>;
const logs = captureLogs();
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-async-'));

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('async'), callbackGiveUpSeconds: GIVE_UP_SECONDS }, { logLevel: 'debug', logStream: logs.stream });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  tenant = await createTenant(t.app.pg, 'async');
  other = await createTenant(t.app.pg, 'async-other');
  ({ runtime, gateway, runUrl, control, node } = await startWorkloadPlatform(t, { gateway: { logLevel: 'debug', logStream: logs.stream } }));
  const target = deployTarget(t, tenant);
  expect((await deployFolder(path.join(EXAMPLES, 'agent'), target, { name: 'echo' })).status).toBe('DEPLOYED');
  const slow = fs.mkdtempSync(path.join(scratch, 'slow-'));
  fs.writeFileSync(path.join(slow, 'main.js'), SLOW_AGENT);
  fs.writeFileSync(path.join(slow, 'hangar.json'), JSON.stringify({ kind: 'agents', name: 'slow', spec: { runtime: { command: ['node', 'main.js'], memory: 256 } } }));
  expect((await deployFolder(slow, target)).status).toBe('DEPLOYED');
}, 120_000);

afterAll(() => stopRuntimeTest({ runtime, node, control, gateway, t, scratch }), 60_000);

/** A callback target: answers each request with the next scripted status (the last one repeats). */
class Target {
  readonly requests: { headers: http.IncomingHttpHeaders; raw: string; body: any }[] = [];
  private server!: http.Server;
  url = '';
  constructor(private readonly statuses: number[]) {}
  async listen(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString();
        this.requests.push({ headers: req.headers, raw, body: JSON.parse(raw) });
        res.writeHead(this.statuses[Math.min(this.requests.length - 1, this.statuses.length - 1)]).end();
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks/agent?token=receiver-token`;
    return this;
  }
  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

type Json = Omit<Response, 'json'> & { json(): Promise<any> };

function run(pathname: string, init: { method?: string; body?: unknown; headers?: Record<string, string>; key?: string } = {}): Promise<Json> {
  return fetch(`${runUrl}${pathname}`, {
    method: init.method ?? 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${init.key ?? tenant.admin.apiKey}`, ...init.headers },
    body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
  }) as Promise<Json>;
}

/** An async request to an agent of the tenant; returns the 202's body. */
async function submit(agent: string, body: unknown, headers: Record<string, string> = {}, query = '') {
  const res = await run(`/${tenant.workspace}/agents/${agent}?async=true${query}`, { body, headers });
  expect(res.status).toBe(202);
  return res.json();
}

const readRequest = async (agent: string, id: string, key = tenant.admin.apiKey, workspace = tenant.workspace) =>
  (await run(`/${workspace}/agents/${agent}/requests/${id}`, { method: 'GET', key })).json();

/** The request once its callback is settled (delivered or given up). */
const settled = (agent: string, id: string) =>
  eventually(`request ${id} and its callback settled`, async () => {
    const view = await readRequest(agent, id);
    return view.callback?.status !== 'pending' && view.status !== 'queued' && view.status !== 'running' ? view : undefined;
  });

async function callbackSecret(key = tenant.admin.apiKey) {
  return t.call(key, { method: 'GET', url: `/v0/workspaces/${tenant.workspace}/callback-secret` });
}

/** Usage events of the tenant's account waiting in the outbox. */
const tenantUsage = () => outboxEvents(t.app.pg, tenant.accountId);

async function agentId(name: string): Promise<string> {
  const { rows } = await t.app.pg.query<{ id: string }>(`SELECT id FROM resources WHERE workspace_id = $1 AND kind = 'agents' AND name = $2`, [tenant.workspaceId, name]);
  return rows[0].id;
}

/** The meter event id the request must have been recorded under. */
async function meterIdOf(agent: string, accepted: { id: string; createdAt: string }): Promise<string> {
  const key = { id: accepted.id, accountId: tenant.accountId, workspace: tenant.workspace, workspaceId: tenant.workspaceId, agentId: await agentId(agent), agentName: agent };
  return meterEventId(asyncRequestUsageTick(key, Date.parse(accepted.createdAt)));
}

const requestRows = async () => Number((await t.app.pg.query('SELECT count(*) FROM agent_requests WHERE workspace_id = $1', [tenant.workspaceId])).rows[0].count);

describe('an async request', () => {
  test('answers 202 at once; the result is read by GET and POSTed to the callback, signed with the workspace secret', async () => {
    const target = await new Target([200]).listen();
    try {
      const thread = unique('thread');
      const res = await run(`/${tenant.workspace}/agents/echo?async=true`, { body: { inputs: 'hello' }, headers: { 'x-service-callback-url': target.url, 'x-service-thread-id': thread } });
      expect(res.status).toBe(202);
      const accepted = await res.json();
      expect(accepted).toMatchObject({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: 'queued', agent: 'echo', workspace: tenant.workspace, result: null, callback: { status: 'pending' } });
      expect(accepted.url).toBe(`${t.config.runUrl}/${tenant.workspace}/agents/echo/requests/${accepted.id}`);
      expect(res.headers.get('location')).toBe(accepted.url);

      const done = await settled('echo', accepted.id);
      // The agent got the body and the thread header: its answer shows the thread's first turn.
      expect(done).toMatchObject({
        id: accepted.id,
        status: 'succeeded',
        result: { statusCode: 200, contentType: 'application/json', body: { output: 'echo: hello', thread, turns: 1, history: [] } },
        error: null,
        callback: { status: 'delivered', error: null },
      });
      expect(target.requests).toHaveLength(1);
      const [delivery] = target.requests;
      expect(delivery.headers['content-type']).toBe('application/json');
      expect(delivery.headers['idempotency-key']).toBe(accepted.id);
      // The body is the request as GET shows it, without the callback's own state.
      const { callback: _callback, ...withoutCallback } = done;
      expect(delivery.body).toEqual(withoutCallback);

      // The receiver verifies with the secret an admin reads; any other secret fails.
      const secret = (await callbackSecret()).json().secret;
      expect(verifyCallback(secret, delivery.headers, delivery.raw)).toBe(true);
      expect(verifyCallback(`${secret}x`, delivery.headers, delivery.raw)).toBe(false);
      expect(delivery.headers[CALLBACK_SIGNATURE_HEADER]).toMatch(/^v1=[0-9a-f]{64}$/);
      expect(Number(delivery.headers[CALLBACK_TIMESTAMP_HEADER])).toBeGreaterThan(0);

      const workflow = await t.app.temporal.workflow.getHandle(agentRequestWorkflowId(tenant.workspace, 'echo', accepted.id)).describe();
      expect(workflow.searchAttributes).toEqual(expect.objectContaining({ HangarWorkspace: [tenant.workspace], HangarResourceKind: ['agents'], HangarResourceName: ['echo'] }));

      // Metered once, as one agent_async_requests_count of the agent.
      const meterId = await meterIdOf('echo', accepted);
      const events = (await tenantUsage()).filter((e) => e.id === meterId);
      expect(events).toEqual([expect.objectContaining({ billing_dimension: 'agent_async_requests_count', resource_name: 'echo', resource_uuid: await agentId('echo'), quantity: 1 })]);
    } finally {
      await target.close();
    }
  });

  test('without a callback: the result is only read; query parameters other than async reach the agent', async () => {
    const accepted = await submit('slow', { inputs: 'q' }, {}, '&lang=en');
    expect(accepted.callback).toBeNull();
    const done = await eventually('the request done', async () => {
      const view = await readRequest('slow', accepted.id);
      return view.status === 'succeeded' ? view : undefined;
    });
    expect(done.result.body).toEqual({ output: 'slow: q', calls: 1, url: '/?lang=en', contentType: 'application/json' });
    expect(done.callback).toBeNull();
  });

  test('an agent answering an error is a failed request with its answer; an answer over 1 MiB fails with the reason', async () => {
    const refused = await submit('slow', { inputs: 'x', status: 422 });
    const failed = await eventually('the request failed', async () => {
      const view = await readRequest('slow', refused.id);
      return view.status === 'failed' ? view : undefined;
    });
    expect(failed.result).toEqual({ statusCode: 422, contentType: 'application/json', body: expect.objectContaining({ output: 'slow: x' }) });

    const big = await submit('slow', { inputs: 'x', big: 1024 * 1024 + 1 });
    const tooBig = await eventually('the big request failed', async () => {
      const view = await readRequest('slow', big.id);
      return view.status === 'failed' ? view : undefined;
    });
    expect(tooBig).toMatchObject({ result: null, error: expect.stringContaining('larger than the limit of 1048576 bytes') });
  });
});

describe('callback delivery', () => {
  test('a target failing first is retried with the same request and a fresh valid signature', async () => {
    const target = await new Target([503, 200]).listen();
    try {
      const accepted = await submit('echo', { inputs: 'again' }, { 'x-service-callback-url': target.url });
      const done = await settled('echo', accepted.id);
      expect(done.callback).toMatchObject({ status: 'delivered', error: null });
      expect(target.requests).toHaveLength(2);
      const secret = (await callbackSecret()).json().secret;
      for (const delivery of target.requests) {
        expect(delivery.headers['idempotency-key']).toBe(accepted.id);
        expect(delivery.raw).toBe(target.requests[0].raw);
        expect(verifyCallback(secret, delivery.headers, delivery.raw)).toBe(true);
      }
    } finally {
      await target.close();
    }
  });

  test('a target that always fails is given up after the bounded time, and the failure is recorded', async () => {
    const target = await new Target([500]).listen();
    try {
      const accepted = await submit('echo', { inputs: 'lost' }, { 'x-service-callback-url': target.url });
      const done = await settled('echo', accepted.id);
      // The request itself succeeded; only its callback failed.
      expect(done.status).toBe('succeeded');
      expect(done.callback).toMatchObject({ status: 'failed', error: expect.stringMatching(/^gave up: no success within the delivery time; last error: callback answered 500/) });
      expect(target.requests.length).toBeGreaterThanOrEqual(2);
      const outcome = await t.app.temporal.workflow.getHandle(agentRequestWorkflowId(tenant.workspace, 'echo', accepted.id)).result();
      expect(outcome).toEqual({ status: 'succeeded', callback: 'failed' });
    } finally {
      await target.close();
    }
  });

  test('a target refusing the callback (400) ends delivery at once', async () => {
    const target = await new Target([400]).listen();
    try {
      const accepted = await submit('echo', { inputs: 'no' }, { 'x-service-callback-url': target.url });
      const done = await settled('echo', accepted.id);
      expect(done.callback).toMatchObject({ status: 'failed', error: 'callback answered 400' });
      expect(target.requests).toHaveLength(1);
    } finally {
      await target.close();
    }
  });
});

test('workers stopped while the agent works, then restarted: the request completes once', async () => {
  const target = await new Target([200]).listen();
  try {
    const accepted = await submit('slow', { inputs: 'patience', delayMs: 3_000 }, { 'x-service-callback-url': target.url });
    // `running` is recorded before the call is sent: wait for the agent itself to hold the request.
    await eventually('the agent called', async () => ((await (await run(`/${tenant.workspace}/agents/slow`, { body: { peek: 'patience' } })).json()).received >= 1 ? true : undefined));
    await node!.stop();
    node = undefined;
    await control!.stop();
    control = undefined;
    // Nothing finished while the workers were away.
    expect((await readRequest('slow', accepted.id)).status).toBe('running');
    control = await startControlWorker(t.config, t.app.pg);
    node = await startNodeWorker(t.config, runtime);

    const done = await settled('slow', accepted.id);
    expect(done).toMatchObject({ status: 'succeeded', callback: { status: 'delivered' } });
    // The interrupted attempt was sent again (with the same Idempotency-Key, which the agent counted).
    const { rows } = await t.app.pg.query<{ attempts: number }>('SELECT attempts FROM agent_requests WHERE id = $1', [accepted.id]);
    expect(rows[0].attempts).toBe(2);
    expect(done.result.body).toMatchObject({ output: 'slow: patience', calls: 2 });
    // One outcome: one callback, one meter event.
    expect(target.requests).toHaveLength(1);
    expect(target.requests[0].body).toMatchObject({ id: accepted.id, status: 'succeeded' });
    const meterId = await meterIdOf('slow', accepted);
    expect((await tenantUsage()).filter((e) => e.id === meterId)).toHaveLength(1);
  } finally {
    await target.close();
  }
}, 90_000);

describe('refusals before anything is accepted', () => {
  test('a bad callback URL is 400 naming the header; no request is stored', async () => {
    const before = await requestRows();
    for (const url of ['ftp://example.com/x', 'not a url', 'https://user:pw@example.com/x']) {
      const res = await run(`/${tenant.workspace}/agents/echo?async=true`, { body: { inputs: 'x' }, headers: { 'x-service-callback-url': url } });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: 'bad_request', message: expect.stringMatching(/^header X-Service-Callback-Url /) });
    }
    const sync = await run(`/${tenant.workspace}/agents/echo`, { body: { inputs: 'x' }, headers: { 'x-service-callback-url': 'https://example.com/x' } });
    expect(sync.status).toBe(400);
    expect((await sync.json()).message).toBe('header X-Service-Callback-Url needs ?async=true');
    const maybe = await run(`/${tenant.workspace}/agents/echo?async=maybe`, { body: { inputs: 'x' } });
    expect(maybe.status).toBe(400);
    expect((await maybe.json()).message).toMatch(/^querystring\.async /);
    expect(await requestRows()).toBe(before);
  });

  test('unknown agent 404, another tenant 403, no credential 401, an agent not serving 503, a body over 1 MiB 413', async () => {
    const before = await requestRows();
    const unknown = await run(`/${tenant.workspace}/agents/nobody?async=true`, { body: { inputs: 'x' } });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: 'not_found', message: expect.stringContaining("'nobody'") });
    expect((await run(`/${tenant.workspace}/agents/echo?async=true`, { body: { inputs: 'x' }, key: other.admin.apiKey })).status).toBe(403);
    const anonymous = await fetch(`${runUrl}/${tenant.workspace}/agents/echo?async=true`, { method: 'POST', body: '{}' });
    expect(anonymous.status).toBe(401);
    expect((await t.call(tenant.admin.apiKey, { method: 'POST', url: '/v0/agents', workspace: tenant.workspace, payload: { metadata: { name: 'idle' } } })).statusCode).toBe(200);
    const idle = await run(`/${tenant.workspace}/agents/idle?async=true`, { body: { inputs: 'x' } });
    expect(idle.status).toBe(503);
    const huge = await run(`/${tenant.workspace}/agents/echo?async=true`, { body: JSON.stringify({ inputs: 'x'.repeat(1024 * 1024) }) });
    expect(huge.status).toBe(413);
    expect(await huge.json()).toEqual({ error: 'payload_too_large', message: expect.stringContaining('1048576 bytes') });
    // Streamed without a Content-Length, the limit is found while reading.
    const chunk = Buffer.alloc(256 * 1024, 'x');
    const stream = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 6; i++) controller.enqueue(chunk);
        controller.close();
      },
    });
    const streamed = await fetch(`${runUrl}/${tenant.workspace}/agents/echo?async=true`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.admin.apiKey}`, 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(await requestRows()).toBe(before);
  });

  test("GET of a request: another workspace's id is 404, as are unknown ids; another tenant's workspace is 403", async () => {
    const accepted = await submit('echo', { inputs: 'mine' });
    expect((await readRequest('echo', accepted.id)).id).toBe(accepted.id);
    const otherAgent = await run(`/${tenant.workspace}/agents/slow/requests/${accepted.id}`, { method: 'GET' });
    expect(otherAgent.status).toBe(404);
    const foreign = await run(`/${other.workspace}/agents/echo/requests/${accepted.id}`, { method: 'GET', key: other.admin.apiKey });
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toEqual({ error: 'not_found', message: expect.stringContaining(accepted.id) });
    expect((await run(`/${tenant.workspace}/agents/echo/requests/${accepted.id}`, { method: 'GET', key: other.admin.apiKey })).status).toBe(403);
    expect((await run(`/${tenant.workspace}/agents/echo/requests/not-a-uuid`, { method: 'GET' })).status).toBe(404);
  });
});

describe('the callback signing secret', () => {
  test('admins read and rotate it, members may not; callbacks after a rotation carry the new one', async () => {
    const member = await addIdentity(t.app.pg, { accountId: tenant.accountId, workspaceId: tenant.workspaceId, role: 'member' });
    expect((await callbackSecret(member.apiKey)).statusCode).toBe(403);
    expect((await callbackSecret(other.admin.apiKey)).statusCode).toBe(404);
    const first = await callbackSecret();
    expect(first.headers['cache-control']).toBe('no-store');
    const old = first.json().secret;
    expect(old).toMatch(/^whsec_/);
    expect((await callbackSecret()).json().secret).toBe(old);

    const rotated = await t.call(tenant.admin.apiKey, { method: 'POST', url: `/v0/workspaces/${tenant.workspace}/callback-secret/rotate` });
    expect(rotated.statusCode).toBe(200);
    const fresh = rotated.json().secret;
    expect(fresh).not.toBe(old);
    expect((await callbackSecret()).json().secret).toBe(fresh);

    const target = await new Target([200]).listen();
    try {
      const accepted = await submit('echo', { inputs: 'after rotation' }, { 'x-service-callback-url': target.url });
      await settled('echo', accepted.id);
      const [delivery] = target.requests;
      expect(verifyCallback(fresh, delivery.headers, delivery.raw)).toBe(true);
      expect(verifyCallback(old, delivery.headers, delivery.raw)).toBe(false);

      // Neither secret is in a log line of either listener, nor in the request's workflow history.
      const history = await t.app.temporal.workflow.getHandle(agentRequestWorkflowId(tenant.workspace, 'echo', accepted.id)).fetchHistory();
      const text = JSON.stringify(history);
      expect(logs.lines.length).toBeGreaterThan(0);
      for (const secret of [old, fresh]) {
        expect(logs.lines.filter((line) => line.includes(secret))).toEqual([]);
        expect(text).not.toContain(secret);
      }
      // Nor is the receiver's token in its URL.
      expect(logs.lines.filter((line) => line.includes('receiver-token'))).toEqual([]);
    } finally {
      await target.close();
    }
  });
});
