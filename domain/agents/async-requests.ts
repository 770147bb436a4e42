import type { UsageTick } from '../billing/metering';

/** Largest request body an async request stores (a larger one is refused with 413). */
export const ASYNC_REQUEST_BODY_LIMIT = 1024 * 1024;
/** Largest agent answer an async request records (a larger one fails the request). */
export const ASYNC_RESULT_BODY_LIMIT = 1024 * 1024;

/** Where the caller names the URL that receives the result. */
export const CALLBACK_URL_HEADER = 'x-service-callback-url';
const CALLBACK_URL_MAX_LENGTH = 2048;

/**
 * Request headers kept with an async request and sent to the agent. An allowlist: what is stored
 * at rest is what the agent's contract needs, never a credential meant for someone else.
 */
export const ASYNC_FORWARDED_HEADERS = ['content-type', 'accept', 'x-service-thread-id'] as const;

export const AGENT_REQUEST_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;
export type AgentRequestStatus = (typeof AGENT_REQUEST_STATUSES)[number];
export type CallbackStatus = 'pending' | 'delivered' | 'failed';

/** Who and what one async request is, as its workflow carries it. */
export interface AgentRequestKey {
  /** The request's id (uuid), also its row's key and the callback's Idempotency-Key. */
  id: string;
  accountId: string;
  workspace: string;
  workspaceId: string;
  agentId: string;
  agentName: string;
}

export class AsyncRequestError extends Error {}

/** Business keys in the id: workspace, agent and request. */
export const agentRequestWorkflowId = (workspace: string, agent: string, id: string) => `agent-request/${workspace}/${agent}/${id}`;

/**
 * The callback URL from its header: an absolute http or https URL without credentials in it (a
 * URL is shown and logged in places a password must not be), at most 2048 characters.
 */
export function parseCallbackUrl(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  const name = 'header X-Service-Callback-Url';
  if (Array.isArray(value)) throw new AsyncRequestError(`${name} must be given once`);
  if (value.length > CALLBACK_URL_MAX_LENGTH) throw new AsyncRequestError(`${name} is longer than ${CALLBACK_URL_MAX_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new AsyncRequestError(`${name} must be an absolute http or https URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new AsyncRequestError(`${name} must use http or https, not ${url.protocol.slice(0, -1)}`);
  if (url.username || url.password) throw new AsyncRequestError(`${name} must not carry credentials; put a token in its path or query instead`);
  return url.href;
}

/** The query string the agent sees: the caller's, without the gateway's own `async` parameter. */
export function agentQuery(url: string): string {
  const at = url.indexOf('?');
  if (at < 0) return '';
  const params = new URLSearchParams(url.slice(at + 1));
  params.delete('async');
  const rest = params.toString();
  return rest ? `?${rest}` : '';
}

/**
 * One accepted async request, metered as one `agent_async_requests_count`. The request id is the
 * tick's occurrence, so the event id is the same however often the metering step is retried.
 */
export function asyncRequestUsageTick(key: AgentRequestKey, acceptedAt: number): UsageTick {
  return {
    accountId: key.accountId,
    workspace: key.workspace,
    resourceType: 'agent',
    resourceName: key.agentName,
    resourceUuid: key.agentId,
    billingDimension: 'agent_async_requests_count',
    quantity: 1,
    periodStart: new Date(acceptedAt),
    occurrence: key.id,
  };
}
