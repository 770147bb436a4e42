import type { FastifyInstance } from 'fastify';
import fc from 'fast-check';
import { renderSandboxUrl } from '../../../domain/sandbox/url-template';
import { AGENT_ROUTES, type AgentRoute } from '../../../sandbox-agent/contract/routes';
import { pathVariant } from '../../helpers/path-variants';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { stopRuntimeTest, startSandboxPlatform } from '../../helpers/runtime-platform';
import { callSandbox, exec, testRuntime } from '../../helpers/sandbox-runtime';
import { type RunningWorker } from '../../helpers/workers';

// What of the sandbox agent's API a workspace member reaches through the sandbox gateway: every
// public route of the agent's table, and none of its internal ones, however spelt; the host
// still reaches those over the sandbox's socket.

let t: TestApp;
let tenant: TestTenant;
let gateway: FastifyInstance;
let control: RunningWorker;
let node: RunningWorker;
let runtime: ReturnType<typeof testRuntime>;
let socketPath: string;
let sandboxPath: string;
let sandboxHost: string;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('surface') });
  tenant = await createTenant(t.app.pg, 'surface');
  ({ runtime, gateway, control, node } = await startSandboxPlatform(t));
  const resources = tenantResources(t, tenant);
  expect((await resources.api('POST', '/v0/sandboxes', { metadata: { name: 'box' }, spec: { runtime: { memory: 256 } } })).statusCode).toBe(200);
  await resources.status('sandboxes', 'box', 'DEPLOYED');
  socketPath = runtime.socketPath(await resources.idOf('sandboxes', 'box'));
  const base = new URL(renderSandboxUrl(t.config.sandboxUrlTemplate, { workspace_id: tenant.workspace, sandbox_id: 'box', region: t.config.region }));
  sandboxPath = base.pathname.replace(/\/$/, '');
  sandboxHost = base.host;
}, 120_000);

afterAll(() => stopRuntimeTest({ runtime, node, control, gateway, t }), 60_000);

interface Example {
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** A stream that never ends by itself (a watch): answered once its head is in. */
  endless?: boolean;
  /** The agent's own answer when it is not a 2xx (a route that only upgrades). */
  status?: number;
}

/** The host's own call to the agent, over the sandbox's socket. */
const host = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => callSandbox(socketPath, method, path, body, headers);

/** A process that runs until the test ends (or a route stops it), by name and pid. */
async function runningProcess(extra: Record<string, unknown> = {}): Promise<{ name: string; pid: number }> {
  const name = unique('p');
  const started = await host('POST', '/process', { command: 'sleep 300', name, ...extra });
  expect(started.status).toBe(200);
  return { name, pid: started.json.pid };
}

async function existingFile(): Promise<string> {
  const path = `workspace/surface/${unique('f')}.txt`;
  expect((await host('PUT', `/filesystem/${path}`, { content: 'x' })).status).toBe(200);
  return path;
}

/** A multipart upload started through the host, by id. */
async function initiatedUpload(): Promise<string> {
  const started = await host('POST', `/filesystem-multipart/initiate/workspace/surface/${unique('big')}.bin`, {});
  expect(started.status).toBe(200);
  return started.json.uploadId;
}

/** One part's body, as multipart/form-data text. */
function partBody(): { body: string; headers: Record<string, string> } {
  const boundary = 'surfaceBoundary';
  return {
    body: `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="part"\r\n\r\npart\r\n--${boundary}--\r\n`,
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}

const MCP_INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'surface-test', version: '1.0.0' } },
};

/**
 * A request that succeeds for each route of the table, made ready through the host. Keyed like
 * the table: a route added there without an example here fails the test.
 */
const EXAMPLES: Record<string, () => Promise<Example>> = {
  'GET /': async () => ({ path: '/' }),
  'GET /health': async () => ({ path: '/health' }),
  'GET /filesystem/{path}': async () => ({ path: `/filesystem/${await existingFile()}` }),
  'PUT /filesystem/{path}': async () => ({ path: `/filesystem/workspace/surface/${unique('put')}.txt`, body: { content: 'put' } }),
  'POST /filesystem/{path}': async () => ({ path: `/filesystem/workspace/surface/${unique('post')}.txt`, body: { content: 'post' } }),
  'DELETE /filesystem/{path}': async () => ({ path: `/filesystem/${await existingFile()}` }),
  'GET /filesystem/tree/{path}': async () => ({ path: '/filesystem/tree/workspace' }),
  // Multipart upload and file trees.
  'PUT /filesystem/tree/{path}': async () => ({ path: `/filesystem/tree/workspace/surface/${unique('tree')}`, body: { files: { 'a.txt': 'a' } } }),
  'DELETE /filesystem/tree/{path}': async () => {
    const path = `workspace/surface/${unique('tree')}`;
    expect((await host('PUT', `/filesystem/tree/${path}`, { files: { 'a.txt': 'a' } })).status).toBe(200);
    return { path: `/filesystem/tree/${path}?recursive=true` };
  },
  'GET /filesystem-multipart': async () => ({ path: '/filesystem-multipart' }),
  'POST /filesystem-multipart/initiate/{path}': async () => ({ path: `/filesystem-multipart/initiate/workspace/surface/${unique('big')}.bin`, body: {} }),
  'PUT /filesystem-multipart/{uploadId}/part': async () => ({ path: `/filesystem-multipart/${await initiatedUpload()}/part?partNumber=1`, ...partBody() }),
  'POST /filesystem-multipart/{uploadId}/complete': async () => {
    const uploadId = await initiatedUpload();
    const { body, headers } = partBody();
    const part = await host('PUT', `/filesystem-multipart/${uploadId}/part?partNumber=1`, body, headers);
    return { path: `/filesystem-multipart/${uploadId}/complete`, body: { parts: [part.json] } };
  },
  'DELETE /filesystem-multipart/{uploadId}/abort': async () => ({ path: `/filesystem-multipart/${await initiatedUpload()}/abort` }),
  'GET /filesystem-multipart/{uploadId}/parts': async () => ({ path: `/filesystem-multipart/${await initiatedUpload()}/parts` }),
  'POST /process': async () => ({ path: '/process', body: { command: 'true', waitForCompletion: true } }),
  'GET /process': async () => ({ path: '/process' }),
  'GET /process/{process}': async () => ({ path: `/process/${(await runningProcess()).name}` }),
  'DELETE /process/{process}': async () => ({ path: `/process/${(await runningProcess()).name}` }),
  'POST /process/{process}/kill': async () => ({ path: `/process/${(await runningProcess()).name}/kill` }),
  'DELETE /process/{process}/kill': async () => ({ path: `/process/${(await runningProcess()).name}/kill` }),
  'GET /process/{process}/logs': async () => ({ path: `/process/${(await runningProcess()).name}/logs` }),
  // A finished process: its log stream ends, so the whole answer can be awaited.
  'GET /process/{process}/logs/stream': async () => ({ path: `/process/${(await exec(socketPath, 'echo done')).pid}/logs/stream` }),
  // A process reading its stdin (cat, then sleep so it outlives its EOF).
  'POST /process/{process}/stdin': async () => ({
    path: `/process/${(await runningProcess({ command: 'cat; sleep 300', stdin: true })).name}/stdin`,
    body: 'hello\n',
    headers: { 'content-type': 'application/octet-stream' },
  }),
  'DELETE /process/{process}/stdin': async () => ({ path: `/process/${(await runningProcess({ command: 'cat; sleep 300', stdin: true })).name}/stdin` }),
  // A plain GET is the agent's 426; the upgrade itself goes through in reference-sdk-process.test.ts.
  'GET /terminal/ws': async () => ({ path: '/terminal/ws', status: 426 }),
  'GET /network/process/{pid}/ports': async () => ({ path: `/network/process/${(await runningProcess()).pid}/ports` }),
  'POST /network/process/{pid}/monitor': async () => ({
    path: `/network/process/${(await runningProcess()).pid}/monitor`,
    body: { callback: 'http://127.0.0.1:9/ports' },
  }),
  'DELETE /network/process/{pid}/monitor': async () => {
    const { pid } = await runningProcess();
    expect((await host('POST', `/network/process/${pid}/monitor`, { callback: 'http://127.0.0.1:9/ports' })).status).toBe(200);
    return { path: `/network/process/${pid}/monitor` };
  },
  '* /mcp': async () => ({ path: '/mcp', body: MCP_INITIALIZE, headers: { accept: 'application/json, text/event-stream' } }),
  'GET /filesystem-find/{path}': async () => ({ path: '/filesystem-find/workspace?type=directory' }),
  // Their HEADs ask only whether the folder can be served: no query needed, and a watch's ends.
  'HEAD /filesystem-find/{path}': async () => ({ path: '/filesystem-find/workspace' }),
  'GET /filesystem-search/{path}': async () => ({ path: '/filesystem-search/workspace?query=surface' }),
  'HEAD /filesystem-search/{path}': async () => ({ path: '/filesystem-search/workspace' }),
  'GET /filesystem-content-search/{path}': async () => ({ path: '/filesystem-content-search/workspace?query=x' }),
  'HEAD /filesystem-content-search/{path}': async () => ({ path: '/filesystem-content-search/workspace' }),
  'GET /watch/filesystem/{path}': async () => ({ path: '/watch/filesystem/workspace/**', endless: true }),
  'HEAD /watch/filesystem/{path}': async () => ({ path: '/watch/filesystem/workspace' }),
  'POST /network/forward': async () => ({ path: '/network/forward', body: { port: 8000 } }),
  'GET /internal/activity': async () => ({ path: '/internal/activity' }),
  'POST /internal/reload': async () => ({ path: '/internal/reload' }),
};

const keyOf = (route: AgentRoute) => `${route.method} ${route.path}`;
const methodOf = (route: AgentRoute) => (route.method === '*' ? 'POST' : route.method);
/** HEAD, which the agent serves on every GET path by the GET route: exercised on each public one too. */
const HEAD_KEYS = AGENT_ROUTES.filter((route) => route.access === 'public' && route.method === 'GET').map((route) => `HEAD ${route.path}`);
/** A key's example: a HEAD without one of its own takes the GET's. */
const exampleOf = (key: string) => (EXAMPLES[key] ?? EXAMPLES[key.replace(/^HEAD /, 'GET ')])();

/** A call through the sandbox gateway with the workspace admin's credential, at the sandbox's address. */
function throughGateway(method: string, path: string, example: Omit<Example, 'path'> = {}) {
  return gateway.inject({
    payloadAsStream: example.endless,
    method: method as 'GET',
    url: `${sandboxPath}${path}`,
    headers: {
      host: sandboxHost,
      authorization: `Bearer ${tenant.admin.apiKey}`,
      ...(example.body !== undefined && typeof example.body !== 'string' ? { 'content-type': 'application/json' } : {}),
      ...example.headers,
    },
    // A string body goes as it is (a multipart part), anything else as JSON.
    payload: typeof example.body === 'string' ? example.body : example.body !== undefined ? JSON.stringify(example.body) : undefined,
  });
}

/** The gateway's own 404, not one of the agent's (whose body is `{error}` alone). */
function expectGatewayNotFound(res: { statusCode: number; json(): unknown }) {
  expect(res.statusCode).toBe(404);
  expect(res.json()).toEqual({ error: 'not_found', message: expect.stringMatching(/^no such endpoint: /) });
}

test('every route of the table has an example, and every example is for a route of the table or a HEAD of a GET', () => {
  expect(AGENT_ROUTES.map(keyOf).filter((key) => EXAMPLES[key] === undefined)).toEqual([]);
  const served = new Set([...AGENT_ROUTES.map(keyOf), ...HEAD_KEYS]);
  expect(Object.keys(EXAMPLES).filter((key) => !served.has(key))).toEqual([]);
});

test.each([...AGENT_ROUTES.filter((route) => route.access === 'public').map(keyOf), ...HEAD_KEYS])('public %s answers through the gateway', async (key) => {
  const route = AGENT_ROUTES.find((candidate) => keyOf(candidate) === key);
  const method = route ? methodOf(route) : 'HEAD';
  const { path, status, ...example } = await exampleOf(key);
  const res = await throughGateway(method, path, example);
  if (example.endless) res.stream().destroy();
  if (status !== undefined) {
    expect(res.statusCode).toBe(status);
    // A HEAD's answer has no body to read the error from.
    if (method !== 'HEAD') expect(res.json()).toEqual({ error: expect.any(String) });
    return;
  }
  expect(res.statusCode).toBeGreaterThanOrEqual(200);
  expect(res.statusCode).toBeLessThan(300);
});

test.each(AGENT_ROUTES.filter((route) => route.access === 'internal').map(keyOf))(
  'internal %s is 404 through the gateway, and the host still reaches it',
  async (key) => {
    const route = AGENT_ROUTES.find((candidate) => keyOf(candidate) === key)!;
    const { path, ...example } = await exampleOf(key);
    for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', methodOf(route)]) {
      const res = await throughGateway(method, path, method === methodOf(route) ? example : {});
      expect(res.statusCode).toBe(404);
      if (method !== 'HEAD') expectGatewayNotFound(res);
    }
    // The reload answers 409 here (the sandbox is in use): reached, and refused for its own reason.
    const direct = await host(methodOf(route), path, example.body);
    expect(direct.status).not.toBe(404);
    expect(direct.status).toBeLessThan(500);
  },
);

test('no spelling of an internal route gets through the gateway', async () => {
  const internal = AGENT_ROUTES.filter((route) => route.access === 'internal');
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...internal).chain((route) => pathVariant(route.path).map((variant) => ({ route, variant }))),
      async ({ route, variant }) => {
        const { path: _path, ...example } = await exampleOf(keyOf(route));
        const res = await throughGateway(methodOf(route), variant, example);
        expectGatewayNotFound(res);
      },
    ),
    { numRuns: 150 },
  );
}, 120_000);
