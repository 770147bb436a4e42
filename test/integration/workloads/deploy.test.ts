import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { buildRunApp } from '../../../api/gateway/run-app';
import { deployFolder, packFolder, type DeployTarget } from '../../../cli/deploy';
import { loadMasterKey } from '../../../store/master-key';
import { workloadPlatformToken } from '../../../domain/workloads/platform-credential';
import { deploymentWorkflowId, revisionSandboxId } from '../../../domain/workloads/workload';
import { sandboxLayout } from '../../../runtime/layout';
import { captureLogs } from '../../helpers/log-capture';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { testRuntime } from '../../helpers/sandbox-runtime';
import { eventually, startNodeWorker, type RunningWorker } from '../../helpers/workers';
import { deployTarget, startWorkloadPlatform, stopRuntimeTest } from '../../helpers/runtime-platform';
import { outboxEvents } from '../../helpers/usage-outbox';
import { repoRoot } from '../../../scripts/stack/binaries';

// Deploying the examples from code bundles and calling them through the inference gateway.
const EXAMPLES = path.join(repoRoot(), 'examples');
// Small, so the 413 case needs little data (read when the app registers its routes).
const BUNDLE_LIMIT = 256 * 1024;
process.env.HANGAR_BUNDLE_LIMIT_BYTES = String(BUNDLE_LIMIT);

let t: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let gateway: FastifyInstance;
let runUrl: string;
let target: DeployTarget;
let control: RunningWorker;
let node: RunningWorker;
let runtime: ReturnType<typeof testRuntime>;
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-workloads-'));

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('workloads') });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  tenant = await createTenant(t.app.pg, 'wl');
  other = await createTenant(t.app.pg, 'wl-other');
  ({ runtime, gateway, runUrl, control, node } = await startWorkloadPlatform(t));
  target = deployTarget(t, tenant);
}, 60_000);

afterAll(() => stopRuntimeTest({ runtime, node, control, gateway, t, scratch }), 60_000);

const api = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) => t.call(tenant.admin.apiKey, { method, url, payload, workspace: tenant.workspace });

function upload(kind: string, name: string, bundle: Buffer) {
  return t.call(tenant.admin.apiKey, { method: 'PUT', url: `/v0/${kind}/${name}/code`, payload: bundle, workspace: tenant.workspace, headers: { 'content-type': 'application/gzip' } });
}

/** A tar.gz with one file at exactly `name` (no normalisation, unlike tar tools), to test what unpacking refuses. */
function rawTarGz(name: string, content: string): Buffer {
  const header = Buffer.alloc(512);
  const octal = (value: number, width: number) => value.toString(8).padStart(width - 1, '0') + '\0';
  header.write(name, 0, 100);
  header.write(octal(0o644, 8), 100);
  header.write(octal(0, 8), 108);
  header.write(octal(0, 8), 116);
  header.write(octal(Buffer.byteLength(content), 12), 124);
  header.write(octal(Math.floor(Date.now() / 1000), 12), 136);
  header.write('0', 156);
  header.write('ustar\0', 257);
  header.write('00', 263);
  header.fill(' ', 148, 156);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(octal(sum, 7) + ' ', 148);
  const body = Buffer.alloc(Math.ceil(Buffer.byteLength(content) / 512) * 512);
  body.write(content);
  return zlib.gzipSync(Buffer.concat([header, body, Buffer.alloc(1024)]));
}

/** A bundle from files given inline. */
async function bundleOf(files: Record<string, string>): Promise<Buffer> {
  const dir = fs.mkdtempSync(path.join(scratch, 'bundle-'));
  for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), content);
  return packFolder(dir);
}

async function settled(kind: string, name: string, revision: number) {
  return eventually(`${kind}/${name} revision ${revision} settled`, async () => {
    const body = (await api('GET', `/v0/${kind}/${name}`)).json();
    const last = body.events[body.events.length - 1];
    return last.message.startsWith(`revision ${revision}`) && (last.status === 'DEPLOYED' || last.status === 'FAILED') ? body : undefined;
  }, 60_000);
}

function run(pathname: string, init: { method?: string; body?: unknown; headers?: Record<string, string>; key?: string | null } = {}) {
  const key = init.key === undefined ? tenant.admin.apiKey : init.key;
  return fetch(`${runUrl}${pathname}`, {
    method: init.method ?? 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  }) as Promise<Omit<Response, 'json'> & { json(): Promise<any> }>;
}

describe('the example agent', () => {
  test('deploys with the CLI: UPLOADING -> BUILDING -> DEPLOYING -> DEPLOYED, named workflow with search attributes', async () => {
    const result = await deployFolder(path.join(EXAMPLES, 'agent'), target, { name: 'echo' });
    expect(result.status).toBe('DEPLOYED');
    expect(result.events.map((e: { status: string }) => e.status)).toEqual(['UPLOADING', 'UPLOADING', 'BUILDING', 'BUILDING', 'DEPLOYING', 'DEPLOYED']);
    // The second BUILDING: the revision's prepare step on the node found base-image, its default image (built by the suite's set-up).
    expect(result.events[3].message).toMatch(/^image 'base-image' is on the node \(sha256:[0-9a-f]{64}\)$/);
    expect(result.metadata.url).toBe(`${t.config.runUrl}/${tenant.workspace}/agents/echo`);
    const desc = await t.app.temporal.workflow.getHandle(deploymentWorkflowId(tenant.workspace, 'agents', 'echo')).describe();
    expect(desc.searchAttributes).toEqual(expect.objectContaining({ HangarWorkspace: [tenant.workspace], HangarResourceKind: ['agents'], HangarResourceName: ['echo'] }));
    const revisions = (await api('GET', '/v0/agents/echo/revisions')).json();
    expect(revisions).toEqual([expect.objectContaining({ revision: 1, status: 'DEPLOYED', bundleSha256: expect.stringMatching(/^[0-9a-f]{64}$/) })]);
  }, 90_000);

  test('answers through the gateway; a thread id gives memory, no thread id none', async () => {
    const plain = await run(`/${tenant.workspace}/agents/echo`, { body: { inputs: 'hello' } });
    expect(plain.status).toBe(200);
    expect(await plain.json()).toEqual({ output: 'echo: hello' });

    const thread = `thread-${randomBytes(3).toString('hex')}`;
    const first = await (await run(`/${tenant.workspace}/agents/echo`, { body: { inputs: 'my name is Ada' }, headers: { 'x-service-thread-id': thread } })).json();
    expect(first).toMatchObject({ turns: 1, history: [] });
    const second = await (await run(`/${tenant.workspace}/agents/echo`, { body: { inputs: 'what is my name?' }, headers: { 'x-service-thread-id': thread } })).json();
    expect(second).toMatchObject({ output: 'echo: what is my name?', turns: 2, history: ['my name is Ada'] });
    // Without the thread id nothing of the thread shows.
    expect(await (await run(`/${tenant.workspace}/agents/echo`, { body: { inputs: 'again' } })).json()).toEqual({ output: 'echo: again' });
  });

  test('threads live in the platform thread store: they outlive a new revision and a worker restart, and are the agent\'s own', async () => {
    const thread = `memo-${randomBytes(3).toString('hex')}`;
    const say = (agent: string, inputs: string) => run(`/${tenant.workspace}/agents/${agent}`, { body: { inputs }, headers: { 'x-service-thread-id': thread } }).then((r) => r.json());
    expect((await deployFolder(path.join(EXAMPLES, 'agent'), target, { name: 'memo' })).status).toBe('DEPLOYED');
    expect(await say('memo', 'first')).toMatchObject({ turns: 1, history: [] });

    // A new revision runs in a new sandbox (nothing of the old one's files), yet remembers.
    const redeployed = await deployFolder(path.join(EXAMPLES, 'agent'), target, { name: 'memo' });
    expect(redeployed.events.at(-1).message).toMatch(/^revision 2/);
    expect(await say('memo', 'second')).toMatchObject({ turns: 2, history: ['first'] });

    // The node worker restarts while the agent keeps running: its platform socket is served again.
    await node.stop();
    node = await startNodeWorker(t.config, runtime);
    expect(await say('memo', 'third')).toMatchObject({ turns: 3, history: ['first', 'second'] });

    // Another agent with the same thread id sees nothing of it.
    expect(await say('echo', 'elsewhere')).toMatchObject({ turns: 1, history: [] });

    const memo = (await t.app.pg.query<{ id: string }>("SELECT id FROM resources WHERE name = 'memo' AND kind = 'agents' AND workspace_id = $1", [tenant.workspaceId])).rows[0];
    const stored = await t.app.pg.query('SELECT role, content FROM agent_thread_messages WHERE agent_id = $1 AND thread_id = $2 ORDER BY seq', [memo.id, thread]);
    expect(stored.rows.map((r) => `${r.role}:${r.content}`)).toEqual(['user:first', 'assistant:echo: first', 'user:second', 'assistant:echo: second', 'user:third', 'assistant:echo: third']);

    // The socket answers only with this deployment's credential, and offers agents no egress.
    const socketPath = sandboxLayout(t.config.dataDir, revisionSandboxId(memo.id, 2)).platformSocket;
    const onSocket = (requestPath: string, token: string) => new Promise<{ status: number; body: any }>((resolve, reject) => {
      http.get({ socketPath, path: requestPath, headers: { authorization: `Bearer ${token}` } }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c)).on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      }).on('error', reject);
    });
    const credential = workloadPlatformToken(loadMasterKey(t.config), revisionSandboxId(memo.id, 2));
    expect((await onSocket(`/v1/threads/${thread}/messages?limit=2`, credential)).body.messages.map((m: { content: string }) => m.content)).toEqual(['third', 'echo: third']);
    const forged = await onSocket(`/v1/threads/${thread}/messages`, workloadPlatformToken(loadMasterKey(t.config), revisionSandboxId(memo.id, 1)));
    expect(forged).toEqual({ status: 401, body: expect.objectContaining({ error: 'unauthorized' }) });
    const egress = await onSocket(`${t.config.baseUrl}/health`, credential);
    expect(egress).toEqual({ status: 403, body: expect.objectContaining({ error: 'egress_denied' }) });

    // Deleting the agent deletes its threads.
    expect((await api('DELETE', '/v0/agents/memo')).statusCode).toBe(200);
    await eventually('the threads of a deleted agent gone', async () => {
      const { rowCount } = await t.app.pg.query('SELECT 1 FROM agent_thread_messages WHERE agent_id = $1', [memo.id]);
      return rowCount === 0 ? true : undefined;
    });
  }, 120_000);
  test('a proxied request writes no log line at info, and its line at debug (never the credential)', async () => {
    for (const level of ['info', 'debug']) {
      const logs = captureLogs();
      const logged = await buildRunApp(t.config, { logLevel: level, logStream: logs.stream });
      await logged.listen({ host: '127.0.0.1', port: 0 });
      try {
        const response = await fetch(`http://127.0.0.1:${(logged.server.address() as AddressInfo).port}/${tenant.workspace}/agents/echo?q=1`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${tenant.admin.apiKey}` },
          body: JSON.stringify({ inputs: 'logged?' }),
        });
        expect(await response.json()).toEqual({ output: 'echo: logged?' });
      } finally {
        await logged.close();
      }
      const lines = logs.lines.filter((line) => line.includes(`/${tenant.workspace}/agents/echo`));
      if (level === 'info') expect(lines).toEqual([]);
      else expect(lines.length).toBeGreaterThan(0);
      expect(logs.lines.join('')).not.toContain(tenant.admin.apiKey);
    }
  });

  test('the gateway: 401 without a credential, 403 for another tenant, 404 unknown, 503 not deployed, all JSON', async () => {
    const path0 = `/${tenant.workspace}/agents/echo`;
    const none = await run(path0, { body: { inputs: 'x' }, key: null });
    expect(none.status).toBe(401);
    expect((await none.json()).error).toBe('unauthorized');
    const stranger = await run(path0, { body: { inputs: 'x' }, key: other.admin.apiKey });
    expect(stranger.status).toBe(403);
    const unknown = await run(`/${tenant.workspace}/agents/nobody`, { body: { inputs: 'x' } });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: 'not_found', message: expect.stringContaining("'nobody'") });
    expect((await api('POST', '/v0/agents', { metadata: { name: 'waiting' } })).statusCode).toBe(200);
    const waiting = await run(`/${tenant.workspace}/agents/waiting`, { body: { inputs: 'x' } });
    expect(waiting.status).toBe(503);
    expect(await waiting.json()).toEqual({ error: 'workload_unavailable', message: expect.stringContaining('UPLOADING') });
  });

  test('a crashed process is restarted and serves again', async () => {
    const crash = await run(`/${tenant.workspace}/agents/echo`, { body: { inputs: '__crash__' } });
    expect(await crash.json()).toEqual({ output: 'crashing' });
    const back = await eventually('the agent answering after its crash', async () => {
      const res = await run(`/${tenant.workspace}/agents/echo`, { body: { inputs: 'alive?' } }).catch(() => undefined);
      return res?.status === 200 ? ((await res.json()) as object) : undefined;
    });
    expect(back).toEqual({ output: 'echo: alive?' });
  });

  test('a failing new revision leaves the old one serving; a good one replaces it and the old is removed', async () => {
    const bad = await upload('agents', 'echo', await bundleOf({ 'main.js': 'process.exit(7)' }));
    expect(bad.statusCode).toBe(202);
    expect(bad.json().revision).toBe(2);
    const afterBad = await settled('agents', 'echo', 2);
    expect(afterBad.status).toBe('DEPLOYED');
    expect(afterBad.events.at(-1)).toMatchObject({ type: 'Warning', message: expect.stringMatching(/revision 2 failed: the command exited with code 7.*revision 1 keeps serving/) });
    expect((await run(`/${tenant.workspace}/agents/echo`, { body: { inputs: 'still v1' } })).status).toBe(200);

    const v3 = await bundleOf({
      'main.js': "require('http').createServer((q, s) => s.end(JSON.stringify({ output: 'v3 ' + process.env.GREETING }))).listen(process.env.PORT, process.env.HOST)",
    });
    await api('PUT', '/v0/agents/echo', { metadata: { name: 'echo' }, spec: { runtime: { envs: [{ name: 'GREETING', value: 'hi' }] } } });
    expect((await upload('agents', 'echo', v3)).json().revision).toBe(3);
    expect((await settled('agents', 'echo', 3)).status).toBe('DEPLOYED');
    expect(await (await run(`/${tenant.workspace}/agents/echo`, { body: { inputs: 'x' } })).json()).toEqual({ output: 'v3 hi' });
    const row = await t.app.pg.query<{ id: string }>("SELECT id FROM resources WHERE name = 'echo' AND kind = 'agents' AND workspace_id = $1", [tenant.workspaceId]);
    await eventually('revision 1 removed', async () => ((await runtime.status(revisionSandboxId(row.rows[0].id, 1))) === undefined ? true : undefined));
  }, 90_000);

  test('deleting the agent removes its running revision', async () => {
    const row = await t.app.pg.query<{ id: string }>("SELECT id FROM resources WHERE name = 'echo' AND kind = 'agents' AND workspace_id = $1", [tenant.workspaceId]);
    expect((await api('DELETE', '/v0/agents/echo')).statusCode).toBe(200);
    await eventually('revision 3 removed', async () => ((await runtime.status(revisionSandboxId(row.rows[0].id, 3))) === undefined ? true : undefined));
    expect((await run(`/${tenant.workspace}/agents/echo`, { body: { inputs: 'x' } })).status).toBe(404);

    // Its life was metered: compute (memory limit x seconds) while it ran, its bundles while stored.
    const events = await eventually('usage of the agent', async () => {
      const mine = await outboxEvents(t.app.pg, tenant.accountId, row.rows[0].id);
      return mine.some((e) => e.billing_dimension === 'agent_image_storage_gbs') ? mine : undefined;
    });
    expect(new Set(events.map((e) => `${e.resource_type}/${e.billing_dimension}`))).toEqual(new Set(['agent/agent_compute_runtime_gbs', 'agent/agent_image_storage_gbs']));
    const computeSeconds = events.filter((e) => e.billing_dimension === 'agent_compute_runtime_gbs').reduce((sum, e) => sum + Number(e.quantity), 0) / (256 / 1024);
    expect(computeSeconds).toBeGreaterThan(0.5);
    expect(computeSeconds).toBeLessThan(120);
  }, 60_000);
});

describe('deployment failures', () => {
  test('a bundle that is no tar.gz fails with the reason', async () => {
    await api('POST', '/v0/agents', { metadata: { name: 'garbage' } });
    expect((await upload('agents', 'garbage', randomBytes(2_000))).statusCode).toBe(202);
    const body = await settled('agents', 'garbage', 1);
    expect(body.status).toBe('FAILED');
    expect(body.events.at(-1).message).toMatch(/bad bundle: not a readable tar.gz/);
    expect((await run(`/${tenant.workspace}/agents/garbage`, { body: { inputs: 'x' } })).status).toBe(503);
  }, 60_000);

  test('a bundle with a path out of its folder fails and writes nothing outside', async () => {
    await api('POST', '/v0/agents', { metadata: { name: 'escape' } });
    const marker = `escape-${randomBytes(4).toString('hex')}.js`;
    expect((await upload('agents', 'escape', rawTarGz(`../../${marker}`, 'pwned'))).statusCode).toBe(202);
    const body = await settled('agents', 'escape', 1);
    expect(body.status).toBe('FAILED');
    expect(body.events.at(-1).message).toContain(`bad bundle: entry '../../${marker}' has a '..' segment`);
    expect(fs.existsSync(path.join(t.config.dataDir, marker))).toBe(false);
    // The same builder with a plain name makes a bundle that deploys: the refusal is about the path.
    await api('POST', '/v0/agents', { metadata: { name: 'raw' }, spec: { runtime: { command: ['node', 'main.js'] } } });
    await upload('agents', 'raw', rawTarGz('main.js', "require('http').createServer((q, s) => s.end('{}')).listen(process.env.PORT, process.env.HOST)"));
    expect((await settled('agents', 'raw', 1)).status).toBe('DEPLOYED');
  }, 60_000);

  test('a command naming a file the bundle lacks, and one that never listens, fail with their reasons', async () => {
    await api('POST', '/v0/agents', { metadata: { name: 'typo' }, spec: { runtime: { command: ['node', 'server.js'] } } });
    await upload('agents', 'typo', await bundleOf({ 'main.js': '' }));
    expect((await settled('agents', 'typo', 1)).events.at(-1).message).toMatch(/needs server.js, which the bundle does not contain/);

    await api('POST', '/v0/agents', { metadata: { name: 'deaf' }, spec: { runtime: { readinessTimeoutSeconds: 2 } } });
    await upload('agents', 'deaf', await bundleOf({ 'main.js': 'setInterval(() => {}, 1000)' }));
    const deaf = await settled('agents', 'deaf', 1);
    expect(deaf.status).toBe('FAILED');
    expect(deaf.events.at(-1).message).toMatch(/did not listen on port 8000 within 2 s/);
  }, 60_000);

  test('a body over the limit is refused with 413, an unknown workload with 404, another type with 415', async () => {
    const tooBig = await upload('agents', 'garbage', randomBytes(BUNDLE_LIMIT + 1));
    expect(tooBig.statusCode).toBe(413);
    expect(tooBig.json()).toEqual({ error: 'payload_too_large', message: expect.stringContaining(`${BUNDLE_LIMIT} bytes`) });
    expect((await api('GET', '/v0/agents/garbage/revisions')).json()).toHaveLength(1);
    expect((await upload('agents', 'nobody', Buffer.from('x'))).statusCode).toBe(404);
    const wrongType = await t.call(tenant.admin.apiKey, { method: 'PUT', url: '/v0/agents/garbage/code', payload: 'x', workspace: tenant.workspace, headers: { 'content-type': 'text/plain' } });
    expect(wrongType.statusCode).toBe(415);
  });
});

describe('the example model and MCP server', () => {
  test('the model answers chat completions, as JSON and streamed as SSE', async () => {
    expect((await deployFolder(path.join(EXAMPLES, 'model'), target)).status).toBe('DEPLOYED');
    const url = `/${tenant.workspace}/models/reverse-model/chat/completions`;
    const messages = [{ role: 'user', content: 'one two three' }];
    const plain = (await (await run(url, { body: { messages } })).json()) as any;
    expect(plain.choices[0].message).toEqual({ role: 'assistant', content: 'three two one' });

    const streamed = await run(url, { body: { messages, stream: true } });
    expect(streamed.headers.get('content-type')).toBe('text/event-stream');
    const text = await streamed.text();
    const chunks = text.split('\n\n').filter(Boolean);
    expect(chunks.at(-1)).toBe('data: [DONE]');
    const content = chunks.slice(0, -1).map((c) => JSON.parse(c.slice('data: '.length)).choices[0].delta.content ?? '').join('');
    expect(content).toBe('three two one');
  }, 60_000);

  test('the MCP server answers the official MCP client through the gateway, sessions intact', async () => {
    expect((await deployFolder(path.join(EXAMPLES, 'mcp-server'), target)).status).toBe('DEPLOYED');
    const client = new Client({ name: 'hangar-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${runUrl}/${tenant.workspace}/functions/calc-mcp/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${tenant.admin.apiKey}` } },
    });
    await client.connect(transport);
    try {
      expect(transport.sessionId).toEqual(expect.any(String));
      const tools = await client.listTools();
      expect(tools.tools.map((tool) => tool.name).sort()).toEqual(['add', 'word_count']);
      expect(await client.callTool({ name: 'add', arguments: { a: 2, b: 40 } })).toMatchObject({ content: [{ type: 'text', text: '42' }] });
    } finally {
      await client.close();
    }
  }, 60_000);
});

test('a function bound to an email connection deploys the built-in email MCP server, with no bundle', async () => {
  const secret = { CLIENT_ID: 'client-1.apps.example', CLIENT_SECRET: 'client-secret-XYZW', REFRESH_TOKEN: 'refresh-token-tail' };
  const connection = await t.call(tenant.admin.apiKey, { method: 'POST', url: '/v0/integrations/connections', payload: { metadata: { name: 'mail', displayName: 'Mail' }, spec: { integration: 'email', secret } }, workspace: tenant.workspace });
  expect(connection.json()).toMatchObject({ metadata: { name: 'mail' } });
  const created = await api('POST', '/v0/functions', { metadata: { name: 'mailer' }, spec: { type: 'mcp', integrationConnections: ['mail'], runtime: { type: 'mcp' } } });
  expect(created.statusCode).toBe(200);
  const body = await settled('functions', 'mailer', 1);
  expect(body.status).toBe('DEPLOYED');
  expect((await api('GET', '/v0/functions/mailer/revisions')).json()).toEqual([expect.objectContaining({ revision: 1, bundleSha256: null, status: 'DEPLOYED' })]);
  // The secrets reached the process, not the workflow's history.
  const history = JSON.stringify(await t.app.temporal.workflow.getHandle(deploymentWorkflowId(tenant.workspace, 'functions', 'mailer')).fetchHistory());
  expect(history).not.toContain(secret.CLIENT_SECRET);
  expect(history).not.toContain(secret.REFRESH_TOKEN);

  const client = new Client({ name: 'hangar-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${runUrl}/${tenant.workspace}/functions/mailer/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${tenant.admin.apiKey}` } },
  }));
  try {
    expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(['send_email', 'whoami']);
  } finally {
    await client.close();
  }
}, 60_000);
