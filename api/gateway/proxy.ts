import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';

/** Headers that belong to one hop, or carry the platform's own credentials: never forwarded. */
const HOP_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'authorization',
  'x-service-authorization',
  'host',
]);

/** `headers` without those of HOP_HEADERS, with `extra` over them: one copy per message. */
export function forwardableHeaders(headers: IncomingHttpHeaders, extra?: Record<string, string>): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !HOP_HEADERS.has(name)) out[name] = value;
  }
  return extra ? Object.assign(out, extra) : out;
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
    headers: forwardableHeaders(req.headers, options.headers),
  });
  upstreamRequest.on('response', (upstream) => {
    res.writeHead(upstream.statusCode ?? 502, upstream.statusMessage, forwardableHeaders(upstream.headers));
    upstream.pipe(res);
    // Headers leave with the first bytes of the body when those came with them (one write and one
    // wake-up of the client per answer, not two); an answer still without a body after this turn
    // of the event loop (SSE, MCP streams, logs) shows its headers at once.
    setImmediate(() => {
      if (!upstream.readableDidRead && !upstream.readableEnded && !res.writableEnded && !res.destroyed) res.flushHeaders();
    });
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
