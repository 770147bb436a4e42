/**
 * A provider model: a model served by an OpenAI-compatible API elsewhere (`spec.runtime.type`
 * 'openai'), reached through the run gateway with the API key of an integration connection,
 * instead of code deployed from a bundle.
 */
export const PROVIDER_MODEL_TYPE = 'openai';
/** The integration whose connections hold a provider's API key. */
export const PROVIDER_INTEGRATION = 'openai';
/** The connection secret sent upstream as `Authorization: Bearer`. */
export const PROVIDER_API_KEY_SECRET = 'API_KEY';
/** The one operation a provider model serves: the bare model path means the same. */
export const PROVIDER_CHAT_PATH = 'chat/completions';

interface ModelSpecShape {
  integrationConnections?: unknown;
  runtime?: unknown;
}

interface ProviderRuntimeShape {
  type?: unknown;
  endpoint?: unknown;
  model?: unknown;
}

/** Where a deployed provider model sends requests; recorded as its serving state, read by gateways. */
export interface ProviderTarget {
  /** Base URL of the OpenAI-compatible API, without a trailing slash (e.g. https://api.openai.com/v1). */
  endpoint: string;
  /** The `model` of every upstream request. */
  model: string;
  /** The integration connection holding the API key. */
  connection: string;
}

function runtimeOf(spec: ModelSpecShape): ProviderRuntimeShape | undefined {
  return typeof spec.runtime === 'object' && spec.runtime !== null ? (spec.runtime as ProviderRuntimeShape) : undefined;
}

export function isProviderModel(spec: ModelSpecShape): boolean {
  return runtimeOf(spec)?.type === PROVIDER_MODEL_TYPE;
}

/** Why `endpoint` cannot be a provider's base URL, or undefined when it can. */
function endpointProblem(endpoint: string): string | undefined {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return 'spec.runtime.endpoint must be an absolute http or https URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `spec.runtime.endpoint must use http or https, not ${url.protocol.slice(0, -1)}`;
  // The key lives in the connection, sealed; a URL is shown to every reader of the model.
  if (url.username || url.password) return 'spec.runtime.endpoint must not carry credentials: put the API key in the integration connection';
  if (url.search || url.hash) return 'spec.runtime.endpoint must be a base URL without a query or fragment';
  return undefined;
}

/**
 * Checks the fields of a model spec that decide how it is served; returns a message naming the
 * field, or undefined. Whether the named connection exists is for the caller, as it needs the
 * database.
 */
export function modelSpecProblem(spec: ModelSpecShape): string | undefined {
  const runtime = runtimeOf(spec);
  const connections = spec.integrationConnections;
  if (!isProviderModel(spec)) {
    if (runtime?.type !== undefined) return `spec.runtime.type must be '${PROVIDER_MODEL_TYPE}' (a provider model) or absent (a model deployed from a code bundle)`;
    if (runtime?.endpoint !== undefined) return `spec.runtime.endpoint is only for provider models (spec.runtime.type '${PROVIDER_MODEL_TYPE}')`;
    if (connections !== undefined) return `spec.integrationConnections is only for provider models (spec.runtime.type '${PROVIDER_MODEL_TYPE}')`;
    return undefined;
  }
  if (typeof runtime?.endpoint !== 'string') return `spec.runtime.endpoint is required for a provider model (the base URL of its OpenAI-compatible API)`;
  const problem = endpointProblem(runtime.endpoint);
  if (problem) return problem;
  if (runtime.model !== undefined && (typeof runtime.model !== 'string' || runtime.model.length === 0)) return 'spec.runtime.model must be a non-empty string';
  if (!Array.isArray(connections) || connections.length !== 1 || typeof connections[0] !== 'string') {
    return `spec.integrationConnections must name exactly one connection of integration '${PROVIDER_INTEGRATION}' (it holds the API key)`;
  }
  return undefined;
}

/** The upstream of a provider model whose spec passed `modelSpecProblem`; `name` is the model's own. */
export function providerTarget(spec: ModelSpecShape, name: string): ProviderTarget {
  const runtime = runtimeOf(spec) ?? {};
  return {
    endpoint: String(runtime.endpoint).replace(/\/+$/, ''),
    model: typeof runtime.model === 'string' ? runtime.model : name,
    connection: String((spec.integrationConnections as string[])[0]),
  };
}

/**
 * The request body sent upstream: the client's JSON object with `model` set to the target's, so
 * a client sends just `{"messages": [...]}` and cannot pick another (costlier) model with the
 * platform's key. Answers a message naming the problem when the body is not a JSON object.
 */
export function upstreamChatBody(body: Buffer, model: string): { body: Buffer } | { problem: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return { problem: 'body must be JSON: a chat request such as {"messages": [{"role": "user", "content": "..."}]}' };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { problem: 'body must be a JSON object with messages' };
  return { body: Buffer.from(JSON.stringify({ ...parsed, model })) };
}
