import type { HangarConfig } from '../../domain/config';

/**
 * The OpenAPI 3 document of the run_url gateway (run-app.ts): what a workspace's members call to
 * reach its agents, models and MCP servers. The gateway forwards those requests as they come, so
 * their bodies and answers are the workload's own; the document says where each one goes, what
 * the gateway itself answers (async agent requests, errors) and how to authenticate. The run
 * gateway serves it at /openapi.json; the management API shows it in /docs.
 */

type Operation = Record<string, unknown>;

/** The methods a forwarded path takes (run-app.ts forwards all of them). */
const FORWARDED = ['get', 'head', 'post', 'put', 'patch', 'delete', 'options'];

const ERROR = {
  type: 'object',
  required: ['error', 'message'],
  properties: { error: { type: 'string', description: 'A stable code, e.g. not_found.' }, message: { type: 'string' } },
};

const AGENT_REQUEST = {
  type: 'object',
  required: ['id', 'workspace', 'agent', 'status', 'createdAt'],
  properties: {
    id: { type: 'string' },
    workspace: { type: 'string' },
    agent: { type: 'string' },
    status: { type: 'string', description: 'queued, running, then succeeded or failed.' },
    createdAt: { type: 'string', format: 'date-time' },
    startedAt: { type: 'string', format: 'date-time', nullable: true },
    completedAt: { type: 'string', format: 'date-time', nullable: true },
    result: {
      type: 'object',
      nullable: true,
      description: "The agent's answer once it has one.",
      properties: { statusCode: { type: 'integer' }, contentType: { type: 'string', nullable: true }, body: {} },
    },
    error: { type: 'string', nullable: true },
    callback: { type: 'object', nullable: true, description: 'The delivery to X-Service-Callback-Url, when one was given.' },
    url: { type: 'string', description: 'Where to read the request again (in the 202 only).' },
  },
};

const errors = {
  '401': { description: 'No credential, or one that is not valid.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
  '403': { description: 'The caller is not a member of the workspace.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
  '404': { description: 'No such workload in the workspace.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
  '503': { description: 'The workload is not serving (not deployed, or failed to start).', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
};

const pathParameter = (name: string, description: string) => ({ name, in: 'path', required: true, schema: { type: 'string' }, description });
const workspace = pathParameter('workspace', 'The workspace the workload belongs to.');
const tail = pathParameter('path', "The rest of the path, of any depth (its slashes are part of it), as the workload's own.");

/** One forwarded path, every method: the workload's own answer, or the gateway's errors. */
function forwarded(operationId: string, summary: string, parameters: Operation[], extra: Record<string, Operation> = {}): Record<string, Operation> {
  const item: Record<string, Operation> = {};
  for (const method of FORWARDED) {
    item[method] = {
      operationId: `${operationId}${method[0].toUpperCase()}${method.slice(1)}`,
      summary,
      tags: [operationId.replace(/^call|Path$/g, '').toLowerCase() || 'run'],
      parameters,
      responses: { '200': { description: "The workload's own answer, streamed as it comes." }, ...errors },
      ...extra[method],
    };
  }
  return item;
}

const asyncAgentCall = {
  parameters: [
    workspace,
    pathParameter('agent', 'The agent.'),
    { name: 'async', in: 'query', required: false, schema: { type: 'string', enum: ['true', 'false'] }, description: 'true: answer 202 at once and run the request in the background.' },
    { name: 'X-Service-Callback-Url', in: 'header', required: false, schema: { type: 'string', format: 'uri' }, description: 'With async=true: where the result is POSTed, signed.' },
  ],
  responses: {
    '200': { description: "The agent's own answer (without async=true)." },
    '202': { description: 'Accepted (async=true): the request, to be read again at its url.', content: { 'application/json': { schema: { $ref: '#/components/schemas/AgentRequest' } } } },
    '413': { description: 'An async request body above the limit.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
    ...errors,
  },
};

/** A GET and its HEAD (Fastify answers HEAD on every GET it serves): the same, without bodies. */
function withHead(get: Operation & { operationId: string; summary: string; responses: Record<string, { description: string; content?: unknown }> }): Record<string, Operation> {
  const responses = Object.fromEntries(Object.entries(get.responses).map(([status, { description }]) => [status, { description }]));
  return { get, head: { ...get, operationId: `${get.operationId}Head`, summary: `${get.summary} (headers only)`, responses } };
}

function paths(): Record<string, Record<string, Operation>> {
  const agent = pathParameter('agent', 'The agent.');
  const model = pathParameter('model', 'The model (a deployed one, or a provider model through its connection).');
  const fn = pathParameter('function', 'The MCP server (a function).');
  return {
    '/{workspace}/agents/{agent}': forwarded('callAgent', "Call an agent at its root; ?async=true runs a POST in the background", [workspace, agent], { post: asyncAgentCall }),
    '/{workspace}/agents/{agent}/requests/{id}': withHead({
      operationId: 'getAgentRequest',
      summary: 'An async request of an agent: its status and, once done, its result',
      tags: ['agents'],
      parameters: [workspace, agent, pathParameter('id', 'The request, as the 202 named it.')],
      responses: { '200': { description: 'OK', content: { 'application/json': { schema: { $ref: '#/components/schemas/AgentRequest' } } } }, ...errors },
    }),
    '/{workspace}/models/{model}': forwarded('callModel', 'Call a model at its root', [workspace, model]),
    '/{workspace}/models/{model}/{path}': forwarded('callModelPath', 'Call a model, e.g. its /chat/completions', [workspace, model, tail]),
    '/{workspace}/functions/{function}/mcp': forwarded('callFunction', 'MCP over streamable HTTP to an MCP server (session headers kept)', [workspace, fn]),
    '/{workspace}/functions/{function}/mcp/{path}': forwarded('callFunctionPath', 'A path below an MCP server\'s /mcp', [workspace, fn, tail]),
    '/health': withHead({ operationId: 'health', summary: 'Whether the gateway is up', tags: ['run'], security: [], responses: { '200': { description: 'OK' } } }),
  };
}

export function runOpenApiDocument(config: HangarConfig): Record<string, unknown> {
  return {
    openapi: '3.0.3',
    info: {
      title: 'Hangar run gateway',
      version: '2026-04-16',
      description:
        "run_url: a workspace's agents, models and MCP servers, each request forwarded to the workload as it comes. " +
        'Credentials as for the management API: `Authorization: Bearer <token>` or `X-Service-Authorization`; they are not passed on. ' +
        'A custom domain serves one workload at its own host, whatever the path.',
    },
    servers: [{ url: config.runUrl.replace(/\/$/, '') }],
    security: [{ bearer: [] }],
    paths: paths(),
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: "An API key or an access token (JWT) of a member of the workload's workspace." } },
      schemas: { Error: ERROR, AgentRequest: AGENT_REQUEST },
    },
  };
}
