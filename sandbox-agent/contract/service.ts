import { schemaOf } from './schema';

/** The agent as a service: its health, its index, the host's view of its activity, and its errors. */

/** GET /health. */
export interface AgentHealth {
  status: 'ok';
  version: string;
  startedAt: string;
  uptimeSeconds: number;
}

/** GET / : the API's name and its public paths. */
export interface AgentIndex {
  name: string;
  version: string;
  sandbox: string;
  endpoints: string[];
}

/** GET /internal/activity: whether the sandbox is in use, for its idle standby. */
export interface AgentActivity {
  /** Requests the sandbox API is serving now (a command waited on, a log stream, ...). */
  inflightRequests: number;
  lastRequestAt: string;
  /** Running processes started with keepAlive: the sandbox stays out of standby while there are any. */
  keepAliveProcesses: number;
}

/** POST /internal/reload: a pre-started sandbox handed to its owner. */
export interface AgentReload {
  sandbox: string;
  message: string;
}

/** Every error the agent answers (4xx and 5xx), the sandbox API's ErrorResponse. */
export interface AgentErrorBody {
  error: string;
}

export const agentHealthSchema = schemaOf<AgentHealth>({
  type: 'object',
  properties: {
    status: { type: 'string', enum: ['ok'] },
    version: { type: 'string' },
    startedAt: { type: 'string', format: 'date-time' },
    uptimeSeconds: { type: 'integer' },
  },
});

export const agentIndexSchema = schemaOf<AgentIndex>({
  type: 'object',
  properties: {
    name: { type: 'string' },
    version: { type: 'string' },
    sandbox: { type: 'string', description: 'The sandbox\'s name.' },
    endpoints: { type: 'array', items: { type: 'string' }, description: 'The public paths of the API.' },
  },
});

export const agentActivitySchema = schemaOf<AgentActivity>({
  type: 'object',
  properties: {
    inflightRequests: { type: 'integer' },
    lastRequestAt: { type: 'string', format: 'date-time' },
    keepAliveProcesses: { type: 'integer', description: 'Running processes started with keepAlive.' },
  },
});

export const agentReloadSchema = schemaOf<AgentReload>({ type: 'object', properties: { sandbox: { type: 'string' }, message: { type: 'string' } } });

export const agentErrorSchema = schemaOf<AgentErrorBody>({
  type: 'object',
  description: 'ErrorResponse: what went wrong, in a sentence safe to show.',
  properties: { error: { type: 'string' } },
});
