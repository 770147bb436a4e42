import type { FastifyInstance, RouteOptions } from 'fastify';
import { buildApp } from '../../../api/app';
import { buildRunApp } from '../../../api/gateway/run-app';
import { buildSandboxGatewayApp } from '../../../api/gateway/sandbox-app';
import { AGENT_ROUTES } from '../../../sandbox-agent/contract/routes';
import { testConfig } from '../../helpers/platform';

// The OpenAPI documents of the sandbox API and of the run_url gateway: each lists every route its
// listener serves (the sandbox API's: every row of the contract's table, HEAD on every GET), each
// gateway serves its own at /openapi.json, and the management API's /docs shows them all.

type Paths = Record<string, Record<string, { operationId: string; responses: Record<string, { content?: unknown }> }>>;

let management: FastifyInstance;
let sandboxGateway: FastifyInstance;
let runGateway: FastifyInstance;
const runRoutes: string[] = [];

beforeAll(async () => {
  const config = testConfig();
  management = await buildApp(config);
  sandboxGateway = await buildSandboxGatewayApp(config, { socketPath: () => '/nonexistent', portSocket: async () => '/nonexistent', isFrozen: async () => false, thaw: async () => ({ generation: 0, frozen: false }) });
  const onRoute = (route: RouteOptions) => {
    for (const method of [route.method].flat()) runRoutes.push(`${method.toLowerCase()} ${route.url}`);
  };
  runGateway = await buildRunApp(config, { onRoute });
  await runGateway.ready();
});

afterAll(async () => {
  await management?.close();
  await sandboxGateway?.close();
  await runGateway?.close();
});

async function documentAt(app: FastifyInstance, url: string): Promise<{ paths: Paths; info: { title: string } }> {
  const reply = await app.inject({ method: 'GET', url });
  expect([url, reply.statusCode]).toEqual([url, 200]);
  return reply.json();
}

/** `METHOD /path` of every operation of a document. */
const operationsOf = (paths: Paths) => Object.entries(paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method} ${path}`));

test('the sandbox API\'s document has every public route of the table, and HEAD on every GET with no body', async () => {
  const { paths } = await documentAt(sandboxGateway, '/openapi.json');
  const listed = operationsOf(paths);
  for (const route of AGENT_ROUTES.filter((r) => r.access === 'public')) {
    if (route.method === '*') expect(Object.keys(paths[route.path] ?? {})).toEqual(expect.arrayContaining(['get', 'post', 'delete']));
    else expect(listed).toContain(`${route.method.toLowerCase()} ${route.path}`);
  }
  for (const route of AGENT_ROUTES.filter((r) => r.access === 'public' && r.method === 'GET')) {
    const head = paths[route.path].head;
    expect([route.path, head?.operationId]).toEqual([route.path, expect.stringMatching(/Head$/)]);
    expect(Object.values(head.responses).filter((response) => response.content !== undefined)).toEqual([]);
  }
});

test('the run gateway\'s document lists exactly the routes the run gateway serves', async () => {
  const document = await documentAt(runGateway, '/openapi.json');
  expect(document.info.title).toMatch(/run gateway/i);
  // Placeholders by shape: Fastify's `:name` and `*`, the document's `{name}` and `{path}`.
  const shape = (operation: string) => operation.replace(/\{[^}]+\}|:[A-Za-z]+|\*/g, '{}');
  const documented = operationsOf(document.paths).map(shape).sort();
  // The document does not list itself.
  const served = [...new Set(runRoutes.filter((route) => !route.endsWith(' /openapi.json')).map(shape))].sort();
  expect(documented).toEqual(served);
});

test('/docs shows the management, sandbox and run gateway documents, each the one its listener serves', async () => {
  let page = await management.inject({ method: 'GET', url: '/docs' });
  for (let hops = 0; page.statusCode === 302 && hops < 3; hops++) page = await management.inject({ method: 'GET', url: new URL(page.headers.location as string, 'http://x/docs/').pathname });
  expect(page.statusCode).toBe(200);
  expect(page.body).toContain('swagger-initializer.js');
  expect(page.headers['content-type']).toMatch(/text\/html/);
  const initializer = await management.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
  expect(initializer.body).toContain('"url":"/openapi.json","name":"Management API"');
  expect(initializer.body).toContain('"url":"/openapi/sandbox.json","name":"Sandbox API"');
  expect(initializer.body).toContain('"url":"/openapi/run.json","name":"Run gateway (run_url)"');
  expect(await documentAt(management, '/openapi/sandbox.json')).toEqual(await documentAt(sandboxGateway, '/openapi.json'));
  expect(await documentAt(management, '/openapi/run.json')).toEqual(await documentAt(runGateway, '/openapi.json'));
});
