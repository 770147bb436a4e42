import type { FastifyInstance, RouteOptions } from 'fastify';
import { buildApp } from '../../../api/app';
import { buildRunApp } from '../../../api/gateway/run-app';
import { buildSandboxGatewayApp } from '../../../api/gateway/sandbox-app';
import { createTenant, startTestApp, testConfig, type TestApp, type TestTenant } from '../../helpers/platform';
import { wrongTypeMutations, type JsonSchema } from '../../helpers/schema-sweep';

// Request bodies are validated exactly: a value of the wrong JSON type is a 400 naming the field,
// never converted into something else. Query strings may still read text as numbers.

let t: TestApp;
let tenant: TestTenant;

beforeAll(async () => {
  t = await startTestApp();
  tenant = await createTenant(t.app.pg, 'types');
});
afterAll(() => t.close());

const send = (app: FastifyInstance, method: string, url: string, body: unknown) =>
  app.inject({
    method: method as 'POST',
    url,
    payload: JSON.stringify(body),
    headers: { authorization: `Bearer ${tenant.admin.apiKey}`, 'x-service-workspace': tenant.workspace, 'content-type': 'application/json' },
  });

describe('wrong types are refused, never coerced', () => {
  const agent = (runtime: Record<string, unknown>) => send(t.app, 'POST', '/v0/agents', { metadata: { name: 'typed' }, spec: { runtime } });

  test.each([
    ['a command line as one string', { command: 'node agent.js' }, 'body.spec.runtime.command must be array'],
    ['a number as the command', { command: 42 }, 'body.spec.runtime.command must be array'],
    ['a number in text', { memory: '1024' }, 'body.spec.runtime.memory must be integer'],
    ['a fraction for an integer', { memory: 1024.5 }, 'body.spec.runtime.memory must be integer'],
    ['null for a number', { memory: null }, 'body.spec.runtime.memory must be integer'],
    ['a list of one number', { memory: [1024] }, 'body.spec.runtime.memory must be integer'],
    ['a number in a list of strings', { command: ['node', 7] }, 'body.spec.runtime.command.1 must be string'],
  ])('%s: 400 naming the field', async (_what, runtime, message) => {
    const res = await agent(runtime);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'bad_request', message });
    expect((await t.call(tenant.admin.apiKey, { method: 'GET', url: '/v0/agents/typed', workspace: tenant.workspace })).statusCode).toBe(404);
  });

  test.each([
    ['jobs', { maxConcurrentTasks: '4' }, 'body.spec.runtime.maxConcurrentTasks must be integer'],
    ['jobs', { timeout: 'an hour' }, 'body.spec.runtime.timeout must be integer'],
    ['jobs', { maxRetries: 500 }, 'body.spec.runtime.maxRetries must be <= 100'],
    ['agents', { readinessTimeoutSeconds: '30' }, 'body.spec.runtime.readinessTimeoutSeconds must be integer'],
  ])('%s: a setting the runtime reads is declared, not replaced by its default when wrong (%j)', async (kind, runtime, message) => {
    const res = await send(t.app, 'POST', `/v0/${kind}`, { metadata: { name: 'settings' }, spec: { runtime } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'bad_request', message });
  });

  test('values of the right type are stored as sent', async () => {
    const created = await agent({ command: ['node', 'agent.js'], memory: 1024 });
    expect(created.statusCode).toBe(200);
    // As sent, with the default image recorded beside (none was named).
    expect(created.json().spec.runtime).toEqual({ command: ['node', 'agent.js'], memory: 1024, image: 'base-image' });
  });

  test('a query string still reads text as a number, and refuses text that is none', async () => {
    const list = (limit: string) => t.call(tenant.admin.apiKey, { method: 'GET', url: `/${tenant.workspace}/jobs/nojob/executions?limit=${limit}` });
    // Past validation: the job is unknown.
    expect((await list('5')).statusCode).toBe(404);
    const bad = await list('five');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toMatch(/^querystring\.limit must be integer/);
  });
});

/**
 * Routes that take a body (POST, PUT, PATCH) without a JSON schema validating it, and why. A new
 * route with a body must either have a schema (and is then swept) or be listed here.
 */
const BODY_METHODS = ['POST', 'PUT', 'PATCH'];
const UNSWEPT_BODIES: Record<string, string> = {
  'base_url POST /v0/workspaces/:name/callback-secret/rotate': 'takes no body',
  'base_url POST /v0/sandboxes/:name/snapshots/:snapshotId/restore': 'takes no body: the path names the sandbox and the snapshot',
  ...Object.fromEntries(['drain', 'undrain'].map((action) => [`base_url POST /v0/nodes/:nodeId/${action}`, 'takes no body: the path names the node'])),
  ...Object.fromEntries(['agents', 'functions', 'models', 'jobs'].map((kind) => [`base_url PUT /v0/${kind}/:name/code`, 'a tar.gz archive, streamed to disk'])),
  'base_url PUT /v0/images/:name/build': 'a tar.gz build context, streamed to disk and checked entry by entry (test/integration/images/image-builds.test.ts)',
  'base_url POST /v0/accounts/:accountId/usage-events':
    'read from its bytes by domain/billing/usage-body.ts, which refuses a wrong type naming the event and field (test/unit/domain/billing/usage-events.test.ts)',
  ...proxied('run_url', ['/:workspace/agents/:name', '/:workspace/models/:name', '/:workspace/models/:name/*', '/:workspace/functions/:name/mcp', '/:workspace/functions/:name/mcp/*']),
  ...proxied('sandbox gateway', ['/*']),
};

function proxied(listener: string, urls: string[]): Record<string, string> {
  return Object.fromEntries(urls.flatMap((url) => BODY_METHODS.map((method) => [`${listener} ${method} ${url}`, 'streamed untouched to the workload or sandbox, whose own API judges it'])));
}

interface BodyRoute {
  key: string;
  method: string;
  url: string;
  body?: JsonSchema;
}

/** Every route of a listener that takes a body, with its body schema, as the app registered it. */
async function bodyRoutes(listener: string, build: (onRoute: (route: RouteOptions) => void) => Promise<FastifyInstance>) {
  const routes: BodyRoute[] = [];
  const app = await build((route) => {
    for (const method of [route.method].flat()) {
      if (!BODY_METHODS.includes(method)) continue;
      routes.push({ key: `${listener} ${method} ${route.url}`, method, url: route.url, body: (route.schema as { body?: JsonSchema } | undefined)?.body });
    }
  });
  await app.ready();
  return { app, routes };
}

/** A concrete URL for a route: the tenant's own workspace and account, any name. */
function concreteUrl(url: string): string {
  return url
    .replace(':workspace', tenant.workspace)
    .replace(':accountId', tenant.accountId)
    .replace(/:[A-Za-z]+/g, 'x')
    .replace('*', 'x');
}

const LISTENERS: Record<string, (onRoute: (route: RouteOptions) => void) => Promise<FastifyInstance>> = {
  base_url: (onRoute) => buildApp(testConfig(), { onRoute }),
  run_url: (onRoute) => buildRunApp(testConfig(), { onRoute }),
  'sandbox gateway': (onRoute) =>
    buildSandboxGatewayApp(testConfig(), { socketPath: () => '/nonexistent', portSocket: async () => '/nonexistent', isFrozen: async () => false, thaw: async () => ({ generation: 0, frozen: false }) }, { onRoute }),
};

describe('schema sweep: every body field of every route refuses every wrong JSON type by name', () => {
  const listeners = new Map<string, Awaited<ReturnType<typeof bodyRoutes>>>();
  beforeAll(async () => {
    for (const [name, build] of Object.entries(LISTENERS)) listeners.set(name, await bodyRoutes(name, build));
  });
  afterAll(async () => {
    for (const { app } of listeners.values()) await app.close();
  });

  test.each(Object.keys(LISTENERS))('%s', async (listener) => {
    const { app, routes } = listeners.get(listener)!;
    const unlisted = routes.filter((route) => !route.body && !UNSWEPT_BODIES[route.key]).map((route) => route.key);
    expect(unlisted).toEqual([]);
    const failures: string[] = [];
    let cases = 0;
    for (const route of routes) {
      if (!route.body || UNSWEPT_BODIES[route.key]) continue;
      for (const mutation of wrongTypeMutations(route.body)) {
        cases++;
        const res = await send(app, route.method, concreteUrl(route.url), mutation.body);
        const message: string = res.json().message ?? '';
        if (res.statusCode !== 400 || !message.startsWith(`${mutation.field} `)) {
          failures.push(`${route.key} ${mutation.field} as ${mutation.kind} ${JSON.stringify(mutation.body)}: ${res.statusCode} ${res.body}`);
        }
      }
    }
    expect(failures).toEqual([]);
    if (listener === 'base_url') expect(cases).toBeGreaterThan(500);
  }, 120_000);

  test('the exceptions name routes that exist', () => {
    const keys = new Set([...listeners.values()].flatMap(({ routes }) => routes.map((route) => route.key)));
    expect(Object.keys(UNSWEPT_BODIES).filter((key) => !keys.has(key))).toEqual([]);
  });
});
