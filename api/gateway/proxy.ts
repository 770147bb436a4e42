import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';

/** Headers that belong to one hop of a connection: never forwarded by any proxy here. */
export const HOP_BY_HOP_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

/** What the gateways never forward: one hop's headers and the platform's own credentials. */
const GATEWAY_DROPPED_HEADERS: ReadonlySet<string> = new Set([...HOP_BY_HOP_HEADERS, 'authorization', 'x-service-authorization']);

export function forwardableHeaders(headers: IncomingHttpHeaders, dropped: ReadonlySet<string> = GATEWAY_DROPPED_HEADERS): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!dropped.has(name) && value !== undefined) out[name] = value;
  }
  return out;
}

export type Upstream = { socketPath: string } | { host: string; port: number };

export interface ProxyOptions {
  upstream: Upstream;
  /** Path (with query) to request upstream. */
  path: string;
  /** Extra headers for the upstream request (e.g. identity of the caller). */
  headers?: Record<string, string>;
  agent?: http.Agent;
  /** Called when the upstream cannot be reached, before anything was sent to the client. */
  onUnreachable(err: Error): void;
}

/**
 * Streams a request to an upstream and its answer back, without buffering either body, so
 * long-running and streamed responses (logs, SSE, MCP) flow as they are produced.
 */
export function proxyRequest(req: IncomingMessage, res: ServerResponse, options: ProxyOptions): void {
  const upstreamRequest = http.request({
    ...options.upstream,
    agent: options.agent,
    method: req.method,
    path: options.path,
    headers: { ...forwardableHeaders(req.headers), ...options.headers },
  });
  upstreamRequest.on('response', (upstream) => {
    const headers = forwardableHeaders(upstream.headers);
    res.writeHead(upstream.statusCode ?? 502, upstream.statusMessage, headers);
    res.flushHeaders();
    upstream.pipe(res);
    upstream.on('error', () => res.destroy());
  });
  upstreamRequest.on('error', (err) => {
    if (!res.headersSent) options.onUnreachable(err);
    else res.destroy(err);
  });
  // A client that goes away cancels the upstream request (and with it, streamed work).
  res.on('close', () => {
    if (!res.writableFinished) upstreamRequest.destroy();
  });
  req.pipe(upstreamRequest);
}
