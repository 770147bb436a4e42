import { AGENT_VERSION } from './agent-config';
import { publicRoutes, type AgentRoute, type RouteAnswer } from './routes';
import type { AnySchema } from './schema';
import { AGENT_SCHEMAS, type SchemaName } from './schemas';

/**
 * The OpenAPI 3 document of the sandbox API as the sandbox gateway serves it: generated from the
 * route table and the contract's schemas, so it lists exactly the public routes and the shapes
 * the agent and its client are compiled against. Internal routes never appear in it.
 */

export interface OpenApiServer {
  url: string;
  variables?: Record<string, { default: string; description?: string }>;
}

type Operation = Record<string, unknown>;

const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });

const json = (schema: unknown) => ({ 'application/json': { schema } });

/** MCP's streamable HTTP uses these methods; `*` in the table stands for them in the document. */
const ANY_METHOD = ['get', 'post', 'delete'];

function answerContent(answer: Exclude<RouteAnswer, 'websocket'>): Record<string, unknown> {
  if (answer === 'lines') return { 'text/plain': { schema: { type: 'string' } } };
  if (answer === 'mcp') return { 'application/json': { schema: { type: 'object' } }, 'text/event-stream': { schema: { type: 'string' } } };
  if (answer === 'file') {
    return {
      'application/json': { schema: { oneOf: [ref('FileContent'), ref('Directory')] } },
      'application/octet-stream': { schema: { type: 'string', format: 'binary' } },
    };
  }
  if (answer.endsWith('[]')) return json({ type: 'array', items: ref(answer.slice(0, -2) as SchemaName) });
  return json(ref(answer as SchemaName));
}

function requestBody(route: AgentRoute): Operation | undefined {
  // A multipart upload's part: the bytes as the `file` part of a form.
  if (route.operation === 'uploadMultipartPart') return { required: true, content: { 'multipart/form-data': { schema: { type: 'object', properties: { file: { type: 'string', format: 'binary' } } } } } };
  // A process's stdin: the raw bytes, written verbatim.
  if (route.operation === 'writeProcessStdin') return { required: true, content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } };
  if (!route.body) return undefined;
  const content: Record<string, unknown> = json(ref(route.body));
  // A file is also written as multipart (a `file` part) or as raw bytes.
  if (route.body === 'FileWrite') {
    content['multipart/form-data'] = { schema: { type: 'object', properties: { file: { type: 'string', format: 'binary' }, permissions: { type: 'string' } } } };
    content['application/octet-stream'] = { schema: { type: 'string', format: 'binary' } };
  }
  return { required: route.body !== 'FileWrite', content };
}

function parameters(route: AgentRoute): Operation[] {
  const inPath = [...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: name === 'pid' ? 'integer' : 'string' },
    description: PATH_PARAMETERS[name],
  }));
  const inQuery = (route.query ?? []).map(({ name, type, description }) => ({ name, in: 'query', required: false, schema: { type }, description }));
  return [...inPath, ...inQuery];
}

const PATH_PARAMETERS: Record<string, string> = {
  path: 'A path inside the sandbox, of any depth (its slashes are part of it).',
  process: 'The process\'s pid or name.',
  pid: 'A process id of the sandbox.',
  uploadId: 'A multipart upload, as initiate answered it.',
};

function operation(route: AgentRoute, method: string): Operation {
  const single = route.method !== '*';
  return {
    operationId: single ? route.operation : `${route.operation}${method[0].toUpperCase()}${method.slice(1)}`,
    summary: route.summary,
    tags: [route.path.split('/')[1] || 'api'],
    parameters: parameters(route),
    requestBody: requestBody(route),
    responses: {
      ...(route.answer === 'websocket'
        ? { '101': { description: 'Switched to WebSocket: JSON text messages both ways.', content: json(ref('TerminalMessage')) } }
        : { '200': { description: 'OK', content: answerContent(route.answer) } }),
      '4XX': { description: 'The request cannot be served; the message says why.', content: json(ref('ErrorResponse')) },
      '5XX': { description: 'The sandbox failed to serve it.', content: json(ref('ErrorResponse')) },
    },
  };
}

/** `optional` marks a field's absence from `required`; the document says it the standard way. */
function standardSchema(schema: AnySchema): AnySchema {
  const { properties, items, additionalProperties, optional: _optional, ...rest } = schema;
  const out: AnySchema = { ...rest };
  if (items) out.items = standardSchema(items);
  if (additionalProperties) out.additionalProperties = standardSchema(additionalProperties);
  if (properties) {
    out.properties = Object.fromEntries(Object.entries(properties).map(([name, field]) => [name, standardSchema(field)]));
    const required = Object.entries(properties).filter(([, field]) => !field.optional).map(([name]) => name);
    if (required.length > 0) out.required = required;
  }
  return out;
}

/** HEAD of a GET route: the agent answers it with the GET's status and headers and no body, by the GET route itself. */
function headOperation(route: AgentRoute): Operation {
  const head = operation(route, 'head');
  const responses = Object.fromEntries(Object.entries(head.responses as Record<string, { description: string }>).map(([status, { description }]) => [status, { description }]));
  return { ...head, operationId: `${route.operation}Head`, summary: `${route.summary} (headers only)`, responses };
}

function paths(): Record<string, Record<string, Operation>> {
  const document: Record<string, Record<string, Operation>> = {};
  for (const route of publicRoutes()) {
    const item = (document[route.path] ??= {});
    for (const method of route.method === '*' ? ANY_METHOD : [route.method.toLowerCase()]) item[method] = operation(route, method);
    if (route.method === 'GET') item.head = headOperation(route);
  }
  return document;
}

export function sandboxApiDocument(servers: OpenApiServer[]): Record<string, unknown> {
  return {
    openapi: '3.0.3',
    info: {
      title: 'Hangar sandbox API',
      version: AGENT_VERSION,
      description:
        'The API of each sandbox (files, processes, ports, MCP), reached at the sandbox\'s address through the sandbox gateway. ' +
        'Credentials as for the management API: `Authorization: Bearer <token>`. Errors answer `{"error": "<message>"}`.',
    },
    servers,
    security: [{ bearer: [] }],
    paths: paths(),
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key or an access token (JWT) of a member of the sandbox\'s workspace.' } },
      schemas: Object.fromEntries(Object.entries(AGENT_SCHEMAS).map(([name, schema]) => [name, standardSchema(schema)])),
    },
  };
}
