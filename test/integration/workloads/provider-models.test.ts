import type { FastifyInstance } from 'fastify';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildRunApp } from '../../../api/gateway/run-app';
import { deploymentWorkflowId } from '../../../domain/workloads/workload';
import { FakeOpenAIProvider, SSE_FIRST, SSE_REST } from '../../fakes/openai-provider';
import { captureLogs } from '../../helpers/log-capture';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { eventually, startControlWorker, type RunningWorker } from '../../helpers/workers';

// Provider models: spec.runtime.type 'openai' proxied by the run gateway to a fake
// OpenAI-compatible API (a real HTTP server) with the API key of an integration connection.
// Nothing runs on a node, so only the control worker is started.

/** Every log line of the platform app and the gateway, at the most verbose level. */
const logs = captureLogs();
let t: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let gateway: FastifyInstance;
let runUrl: string;
let control: RunningWorker;
const provider = new FakeOpenAIProvider();
const KEY_1 = `sk-test-${unique('one')}-0123456789`;
const KEY_2 = `sk-test-${unique('two')}-9876543210`;
/** Every response body and header block a client saw, searched for keys at the end. */
const seen: string[] = [];

beforeAll(async () => {
  await provider.start();
  provider.acceptedKeys.add(KEY_1);
  t = await startTestApp({ taskQueue: unique('provider-models') }, { logLevel: 'trace', logStream: logs.stream });
  tenant = await createTenant(t.app.pg, 'pm');
  other = await createTenant(t.app.pg, 'pm-other');
  gateway = await buildRunApp(t.config, { logLevel: 'trace', logStream: logs.stream });
  await gateway.listen({ host: '127.0.0.1', port: 0 });
  runUrl = `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`;
  control = await startControlWorker(t.config, t.app.pg);
  const created = await api('POST', '/v0/integrations/connections', { metadata: { name: 'llm', displayName: 'LLM provider' }, spec: { integration: 'openai', secret: { API_KEY: KEY_1 } } });
  expect(created.statusCode).toBe(200);
}, 60_000);

afterAll(async () => {
  await control?.stop();
  await gateway?.close();
  await t?.close();
  await provider.stop();
}, 60_000);

async function api(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object, who: TestTenant = tenant) {
  const res = await t.call(who.admin.apiKey, { method, url, workspace: who.workspace, ...(payload ? { payload } : {}) });
  seen.push(res.body);
  return res;
}

const model = (name: string, runtime: Record<string, unknown>, connections: string[] | null = ['llm']) => ({
  metadata: { name },
  spec: { runtime: { type: 'openai', ...runtime }, ...(connections ? { integrationConnections: connections } : {}) },
});

async function settled(name: string, revision: number) {
  return eventually(`model ${name} revision ${revision} settled`, async () => {
    const body = (await api('GET', `/v0/models/${name}`)).json();
    const last = body.events.at(-1);
    return last.message.startsWith(`revision ${revision}`) && (last.status === 'DEPLOYED' || last.status === 'FAILED') ? body : undefined;
  });
}

/** A call through the gateway; the body read whole and kept for the final key check. */
async function run(pathname: string, body: unknown, init: { headers?: Record<string, string>; method?: string } = {}) {
  const res = await fetch(`${runUrl}${pathname}`, {
    method: init.method ?? 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${tenant.admin.apiKey}`, ...init.headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  seen.push(text, JSON.stringify([...res.headers]));
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) };
}

const chat = { messages: [{ role: 'user', content: 'hello there' }] };

describe('a provider model', () => {
  test('deploys without a bundle through the deployment workflow, with status, events and search attributes', async () => {
    const created = await api('POST', '/v0/models', model('gpt', { endpoint: provider.baseUrl, model: 'gpt-4o-mini' }));
    expect(created.statusCode).toBe(200);
    expect(created.json().metadata.url).toBe(`${t.config.runUrl}/${tenant.workspace}/models/gpt`);
    const body = await settled('gpt', 1);
    expect(body.status).toBe('DEPLOYED');
    expect(body.events.map((e: { status: string }) => e.status)).toEqual(['UPLOADING', 'DEPLOYING', 'DEPLOYED']);
    expect(body.events.at(-1).message).toBe(`revision 1: serving through ${provider.baseUrl} as model 'gpt-4o-mini'`);
    expect((await api('GET', '/v0/models/gpt/revisions')).json()).toEqual([expect.objectContaining({ revision: 1, bundleSha256: null, status: 'DEPLOYED' })]);
    const handle = t.app.temporal.workflow.getHandle(deploymentWorkflowId(tenant.workspace, 'models', 'gpt'));
    expect((await handle.describe()).searchAttributes).toEqual(
      expect.objectContaining({ HangarWorkspace: [tenant.workspace], HangarResourceKind: ['models'], HangarResourceName: ['gpt'] }),
    );
    expect(JSON.stringify(await handle.fetchHistory())).not.toContain(KEY_1);
    // A provider model has no code.
    const upload = await t.call(tenant.admin.apiKey, { method: 'PUT', url: '/v0/models/gpt/code', payload: Buffer.from('x'), workspace: tenant.workspace, headers: { 'content-type': 'application/gzip' } });
    expect(upload.statusCode).toBe(400);
    expect(upload.json().message).toMatch(/provider model .* no code/);
  }, 60_000);

  test('a JSON completion round trip: the upstream gets the API key, the model name and the messages, never the platform credential', async () => {
    const before = provider.requests.length;
    const res = await run(`/${tenant.workspace}/models/gpt/chat/completions`, chat, {
      headers: { 'x-service-authorization': `Bearer ${tenant.admin.apiKey}`, cookie: 'session=client-secret-cookie', 'x-request-id': 'req-42' },
    });
    expect(res.status).toBe(200);
    expect(res.json()).toMatchObject({ model: 'gpt-4o-mini', choices: [{ message: { role: 'assistant', content: 'you said: hello there' } }] });
    expect(res.headers.get('set-cookie')).toBeNull();
    const seenUpstream = provider.requests.slice(before);
    expect(seenUpstream).toHaveLength(1);
    const [request] = seenUpstream;
    expect(request).toMatchObject({ method: 'POST', path: '/v1/chat/completions', body: { ...chat, model: 'gpt-4o-mini' } });
    expect(request.headers.authorization).toBe(`Bearer ${KEY_1}`);
    expect(request.headers['x-request-id']).toBe('req-42');
    expect(request.headers['x-service-authorization']).toBeUndefined();
    expect(request.headers.cookie).toBeUndefined();
    expect(JSON.stringify(request.headers)).not.toContain(tenant.admin.apiKey);

    // The bare model path is the same chat endpoint; a client's own `model` cannot pick another one.
    const bare = await run(`/${tenant.workspace}/models/gpt`, { ...chat, model: 'o1-pro' });
    expect(bare.status).toBe(200);
    expect(provider.requests.at(-1)).toMatchObject({ path: '/v1/chat/completions', body: { model: 'gpt-4o-mini' } });
  });

  test('an SSE stream arrives byte for byte, its first event before the upstream ends the stream', async () => {
    const res = await fetch(`${runUrl}/${tenant.workspace}/models/gpt/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${tenant.admin.apiKey}` },
      body: JSON.stringify({ ...chat, stream: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const reader = res.body!.getReader();
    const received: Buffer[] = [];
    // The upstream holds the rest back until released: this only completes if the gateway passed the first event on.
    while (Buffer.concat(received).length < Buffer.byteLength(SSE_FIRST)) {
      const { value, done } = await reader.read();
      if (done) break;
      received.push(Buffer.from(value));
    }
    expect(Buffer.concat(received).toString('utf8')).toBe(SSE_FIRST);
    provider.releaseStream();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      received.push(Buffer.from(value));
    }
    expect(Buffer.concat(received).equals(Buffer.from(SSE_FIRST + SSE_REST))).toBe(true);
  });

  test('upstream errors come back with their status and body, the API key taken out', async () => {
    await api('PUT', '/v0/models/gpt', model('gpt', { endpoint: provider.baseUrl, model: 'fail-500' }));
    await settled('gpt', 2);
    const res = await run(`/${tenant.workspace}/models/gpt/chat/completions`, chat);
    expect(res.status).toBe(500);
    expect(res.json()).toEqual({ error: { message: 'failed on purpose for Bearer [redacted]', type: 'server_error' } });
    // The upstream did get the key: the redaction is what kept it out.
    expect(provider.requests.at(-1)!.headers.authorization).toBe(`Bearer ${KEY_1}`);

    await api('PUT', '/v0/models/gpt', model('gpt', { endpoint: provider.baseUrl, model: 'fail-429' }));
    await settled('gpt', 3);
    const limited = await run(`/${tenant.workspace}/models/gpt/chat/completions`, chat);
    expect(limited.status).toBe(429);
    expect(limited.json().error.message).toBe('failed on purpose for Bearer [redacted]');
  }, 60_000);

  test('an update re-deploys: the new upstream model serves, and a model without an override is called by its own name', async () => {
    await api('PUT', '/v0/models/gpt', model('gpt', { endpoint: `${provider.baseUrl}/` }));
    expect((await settled('gpt', 4)).status).toBe('DEPLOYED');
    const res = await run(`/${tenant.workspace}/models/gpt/chat/completions`, chat);
    expect(res.status).toBe(200);
    expect(provider.requests.at(-1)).toMatchObject({ path: '/v1/chat/completions', body: { model: 'gpt' } });
  }, 60_000);

  test('a new API key in the connection takes effect without touching the model', async () => {
    provider.acceptedKeys.add(KEY_2);
    const updated = await api('PUT', '/v0/integrations/connections/llm', { metadata: { name: 'llm', displayName: 'LLM provider' }, spec: { secret: { API_KEY: KEY_2 } } });
    expect(updated.statusCode).toBe(200);
    provider.acceptedKeys.delete(KEY_1);
    await eventually('the gateway using the new key', async () => ((await run(`/${tenant.workspace}/models/gpt/chat/completions`, chat)).status === 200 ? true : undefined));
    expect(provider.requests.at(-1)!.headers.authorization).toBe(`Bearer ${KEY_2}`);
  });

  test('the gateway: 401 without a credential, 403 for another tenant, other paths 404, other methods 405, a body that is no JSON 400', async () => {
    const path0 = `/${tenant.workspace}/models/gpt/chat/completions`;
    expect((await run(path0, chat, { headers: { authorization: '' } })).status).toBe(401);
    expect((await run(path0, chat, { headers: { authorization: `Bearer ${other.admin.apiKey}` } })).status).toBe(403);
    const before = provider.requests.length;
    const embeddings = await run(`/${tenant.workspace}/models/gpt/embeddings`, { input: 'x' });
    expect(embeddings.status).toBe(404);
    expect(embeddings.json()).toEqual({ error: 'not_found', message: expect.stringContaining('chat/completions') });
    const get = await run(path0, undefined, { method: 'GET' });
    expect(get.status).toBe(405);
    expect(get.json().error).toBe('method_not_allowed');
    const notJson = await run(path0, 'messages=hello');
    expect(notJson.status).toBe(400);
    expect(notJson.json().message).toMatch(/^body must be JSON/);
    expect(provider.requests.length).toBe(before);
  });

  test('an upstream nobody answers gives 502 JSON; the model serves again once it points back', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await api('POST', '/v0/models', model('offline', { endpoint: `http://127.0.0.1:${deadPort}/v1` }));
    expect((await settled('offline', 1)).status).toBe('DEPLOYED');
    const res = await run(`/${tenant.workspace}/models/offline/chat/completions`, chat);
    expect(res.status).toBe(502);
    expect(res.json()).toEqual({ error: 'upstream_unreachable', message: expect.stringContaining(`http://127.0.0.1:${deadPort}`) });

    await api('PUT', '/v0/models/offline', model('offline', { endpoint: provider.baseUrl }));
    await settled('offline', 2);
    expect((await run(`/${tenant.workspace}/models/offline/chat/completions`, chat)).status).toBe(200);
  }, 60_000);

  test('a connection in use cannot be deleted; deleting the model stops its route, then the connection can go', async () => {
    const blocked = await api('DELETE', '/v0/integrations/connections/llm');
    expect(blocked.statusCode).toBe(409);
    expect(blocked.json().message).toMatch(/used by model\(s\) 'gpt', 'offline'/);
    expect((await api('DELETE', '/v0/models/offline')).statusCode).toBe(200);
    expect((await api('DELETE', '/v0/models/gpt')).statusCode).toBe(200);
    await eventually('the deleted model gone from the gateway', async () => ((await run(`/${tenant.workspace}/models/gpt/chat/completions`, chat)).status === 404 ? true : undefined));
    expect((await api('DELETE', '/v0/integrations/connections/llm')).statusCode).toBe(200);
  }, 60_000);
});

describe('provider model validation', () => {
  const bad = async (payload: object, message: RegExp) => {
    const res = await api('POST', '/v0/models', payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'bad_request', message: expect.stringMatching(message) });
  };

  test('the connection must exist in the workspace and be of integration openai', async () => {
    await api('POST', '/v0/integrations/connections', { metadata: { name: 'mail', displayName: 'Mail' }, spec: { integration: 'email', secret: { CLIENT_ID: 'a', CLIENT_SECRET: 'b', REFRESH_TOKEN: 'c' } } });
    await api('POST', '/v0/integrations/connections', { metadata: { name: 'theirs', displayName: 'x' }, spec: { integration: 'openai', secret: { API_KEY: 'sk-other' } } }, other);
    const endpoint = { endpoint: provider.baseUrl };
    await bad(model('m1', endpoint, ['ghost']), /^spec\.integrationConnections: connection 'ghost' does not exist in workspace/);
    await bad(model('m1', endpoint, ['theirs']), /^spec\.integrationConnections: connection 'theirs' does not exist in workspace/);
    await bad(model('m1', endpoint, ['mail']), /^spec\.integrationConnections: connection 'mail' is of integration 'email', not 'openai'/);
    await bad(model('m1', endpoint, null), /^spec\.integrationConnections must name exactly one connection/);
    expect((await api('GET', '/v0/models/m1')).statusCode).toBe(404);
  });

  test('the endpoint must be an http(s) base URL without credentials; other runtime types and misplaced fields are refused', async () => {
    await api('POST', '/v0/integrations/connections', { metadata: { name: 'llm2', displayName: 'x' }, spec: { integration: 'openai', secret: { API_KEY: 'sk-2' } } });
    await bad(model('m2', {}, ['llm2']), /^spec\.runtime\.endpoint is required/);
    await bad(model('m2', { endpoint: 'not a url' }, ['llm2']), /^spec\.runtime\.endpoint must be an absolute http or https URL/);
    await bad(model('m2', { endpoint: 'ftp://example.com/v1' }, ['llm2']), /^spec\.runtime\.endpoint must use http or https, not ftp/);
    await bad(model('m2', { endpoint: 'https://user:pw@example.com/v1' }, ['llm2']), /^spec\.runtime\.endpoint must not carry credentials/);
    await bad({ metadata: { name: 'm2' }, spec: { runtime: { type: 'vllm' } } }, /^spec\.runtime\.type must be 'openai'/);
    await bad({ metadata: { name: 'm2' }, spec: { integrationConnections: ['llm2'] } }, /^spec\.integrationConnections is only for provider models/);
    // A function cannot run a provider connection: it has no MCP server.
    const fn = await api('POST', '/v0/functions', { metadata: { name: 'f1' }, spec: { type: 'mcp', integrationConnections: ['llm2'], runtime: { type: 'mcp' } } });
    expect(fn.statusCode).toBe(400);
    expect(fn.json().message).toMatch(/connection 'llm2' is of integration 'openai', which has no MCP server/);
    // An update is checked the same way and leaves the model as it was.
    await api('POST', '/v0/models', model('m3', { endpoint: provider.baseUrl }, ['llm2']));
    const update = await api('PUT', '/v0/models/m3', model('m3', { endpoint: provider.baseUrl }, ['ghost']));
    expect(update.statusCode).toBe(400);
    expect((await api('GET', '/v0/models/m3')).json().spec.integrationConnections).toEqual(['llm2']);
  });

  test('the catalog lists the provider integration with its API_KEY secret and no OAuth flow or MCP server', async () => {
    const res = await api('GET', '/v0/integrations/openai');
    expect(res.json()).toEqual({
      name: 'openai',
      displayName: expect.any(String),
      description: expect.any(String),
      secrets: [{ name: 'API_KEY', required: true, description: expect.any(String) }],
    });
    const provisioning = await api('POST', '/v0/integrations/provisionings', { integration: 'openai', tenant: 'ada', code: 'c', redirectUri: 'https://x/cb', clientId: 'a', clientSecret: 'b' });
    expect(provisioning.statusCode).toBe(400);
    expect(provisioning.json().message).toMatch(/'openai' has no OAuth flow/);
  });
});

test('no API key appears in any response or log line', () => {
  expect(logs.lines.length).toBeGreaterThan(0);
  for (const text of [...seen, ...logs.lines]) {
    expect(text).not.toContain(KEY_1);
    expect(text).not.toContain(KEY_2);
  }
});
