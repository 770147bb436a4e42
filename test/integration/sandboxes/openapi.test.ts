import Ajv from 'ajv';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../../api/app';
import { buildSandboxGatewayApp } from '../../../api/gateway/sandbox-app';
import { AGENT_ROUTES } from '../../../sandbox-agent/contract/routes';
import { testConfig } from '../../helpers/platform';

// The sandbox API's OpenAPI document: generated from the agent's contract, served by the sandbox
// gateway at /openapi.json without a credential, and shown in the management API's /docs.

let gateway: FastifyInstance;
let management: FastifyInstance;

beforeAll(async () => {
  const config = testConfig();
  gateway = await buildSandboxGatewayApp(config, { socketPath: () => '/nonexistent', portSocket: async () => '/nonexistent', isFrozen: async () => false, thaw: async () => ({ generation: 0, frozen: false }) });
  management = await buildApp(config);
});

afterAll(async () => {
  await gateway?.close();
  await management?.close();
});

const METHODS = ['get', 'head', 'put', 'post', 'delete', 'patch', 'options'];

interface Document {
  openapi: string;
  info: { title: string; version: string };
  servers: { url: string; variables?: Record<string, { default: string }> }[];
  paths: Record<string, Record<string, { operationId: string; parameters: { name: string; in: string }[]; responses: Record<string, unknown> }>>;
  components: { schemas: Record<string, object> };
}

async function sandboxDocument(): Promise<Document> {
  const reply = await gateway.inject({ method: 'GET', url: '/openapi.json' });
  expect(reply.statusCode).toBe(200);
  expect(reply.headers['content-type']).toMatch(/^application\/json/);
  return reply.json();
}

/** Every `$ref` in a value. */
function refsIn(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(refsIn);
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, inner]) => (key === '$ref' && typeof inner === 'string' ? [inner] : refsIn(inner)));
}

test('the gateway serves a valid OpenAPI 3 document at /openapi.json, with no credential', async () => {
  const document = await sandboxDocument();
  expect(document.openapi).toMatch(/^3\.0\.\d+$/);
  expect(document.info).toEqual(expect.objectContaining({ title: expect.any(String), version: expect.any(String) }));
  // The server is the sandbox address template; each of its placeholders is a server variable.
  const [server] = document.servers;
  for (const [, name] of server.url.matchAll(/\{(\w+)\}/g)) expect(server.variables?.[name]?.default).toEqual(expect.any(String));

  const operationIds: string[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    expect(path.startsWith('/')).toBe(true);
    const placeholders = [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => name);
    for (const [method, operation] of Object.entries(item)) {
      expect(METHODS).toContain(method);
      operationIds.push(operation.operationId);
      expect(operation.parameters.filter((p) => p.in === 'path').map((p) => p.name)).toEqual(placeholders);
      // The terminal answers 101 and speaks WebSocket from there.
      expect(Object.keys(operation.responses)).toContain(path === '/terminal/ws' ? '101' : '200');
    }
  }
  expect(new Set(operationIds).size).toBe(operationIds.length);
  // Every reference resolves, and every schema is one a JSON Schema validator compiles.
  for (const ref of refsIn(document)) expect(document.components.schemas[ref.replace('#/components/schemas/', '')]).toBeDefined();
  const ajv = new Ajv({ strict: false });
  for (const [name, schema] of Object.entries(document.components.schemas)) ajv.addSchema(schema, `#/components/schemas/${name}`);
  for (const name of Object.keys(document.components.schemas)) expect(() => ajv.getSchema(`#/components/schemas/${name}`)).not.toThrow();
});

test('the document lists every public route of the contract and none of its internal ones', async () => {
  const document = await sandboxDocument();
  const listed = Object.entries(document.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`));
  for (const route of AGENT_ROUTES.filter((r) => r.access === 'public')) {
    if (route.method === '*') expect(document.paths[route.path]).toEqual(expect.objectContaining({ get: expect.anything(), post: expect.anything(), delete: expect.anything() }));
    else expect(listed).toContain(`${route.method} ${route.path}`);
  }
  for (const route of AGENT_ROUTES.filter((r) => r.access === 'internal')) expect(document.paths[route.path]).toBeUndefined();
  // Nor anything under an internal route's path, nor its operation's name.
  expect(JSON.stringify(document)).not.toMatch(/\/internal\/|\/network\/forward|forwardPort|"reload"/);
  expect(listed.length).toBeGreaterThanOrEqual(AGENT_ROUTES.filter((r) => r.access === 'public').length);
});

test('the process record of the document is the one the agent answers with', async () => {
  const { components } = await sandboxDocument();
  const process = components.schemas.Process as { required: string[]; properties: Record<string, { type: string; nullable?: boolean; enum?: string[] }> };
  expect(process.required.sort()).toEqual(
    ['pid', 'name', 'command', 'status', 'startedAt', 'completedAt', 'exitCode', 'workingDir', 'logs', 'stdout', 'stderr', 'restartOnFailure', 'maxRestarts', 'restartCount', 'keepAlive', 'stdin'].sort(),
  );
  expect(process.properties.status.enum).toEqual(['running', 'completed', 'failed', 'killed', 'stopped']);
  expect(process.properties.exitCode).toMatchObject({ type: 'integer', nullable: true });
  const request = components.schemas.ProcessRequest as { required: string[] };
  expect(request.required).toEqual(['command']);
  expect(components.schemas.ErrorResponse).toMatchObject({ required: ['error'], properties: { error: { type: 'string' } } });
});

test('a process\'s stdin takes raw bytes, not JSON', async () => {
  const { paths } = await sandboxDocument();
  const write = paths['/process/{process}/stdin'].post as unknown as { requestBody: { required: boolean; content: Record<string, unknown> } };
  expect(write.requestBody).toEqual({ required: true, content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } });
  expect(paths['/process/{process}/stdin'].delete).toMatchObject({ operationId: 'closeProcessStdin' });
});

test('the management API shows both documents in /docs, the sandbox API\'s being the gateway\'s', async () => {
  const initializer = await management.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
  expect(initializer.statusCode).toBe(200);
  expect(initializer.body).toContain('"url":"/openapi.json","name":"Management API"');
  expect(initializer.body).toContain('"url":"/openapi/sandbox.json","name":"Sandbox API"');
  const copy = await management.inject({ method: 'GET', url: '/openapi/sandbox.json' });
  expect(copy.statusCode).toBe(200);
  expect(copy.json()).toEqual(await sandboxDocument());
  expect((await management.inject({ method: 'GET', url: '/openapi.json' })).json().info.title).toBe('Hangar API');
});
