import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import { relayUpgrade } from './upgrade-relay';

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

/** `headers` without the `dropped` ones, with `extra` over them: one copy per message. */
export function forwardableHeaders(headers: IncomingHttpHeaders, extra?: Record<string, string>, dropped: ReadonlySet<string> = GATEWAY_DROPPED_HEADERS): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !dropped.has(name)) out[name] = value;
  }
  return extra ? Object.assign(out, extra) : out;
}

export type Upstream = { socketPath: string } | { host: string; port: number; tls?: boolean };

/** An error answer is read whole to be rewritten only up to this size; a longer one is cut there. */
const MAX_REWRITTEN_ERROR_BYTES = 1024 * 1024;

export interface ProxyOptions {
  upstream: Upstream;
  /** Path (with query) to request upstream. */
  path: string;
  /** Extra headers for the upstream request (e.g. identity of the caller). */
  headers?: Record<string, string>;
  /** The client's headers that go upstream, and the upstream's that come back; by default all but hop-by-hop and credentials. */
  requestHeaders?(headers: IncomingHttpHeaders): IncomingHttpHeaders;
  responseHeaders?(headers: IncomingHttpHeaders): IncomingHttpHeaders;
  /** Sent instead of the client's body, which the caller has read already (to rewrite it). */
  body?: Buffer;
  /** Rewrites an error answer (4xx, 5xx) before the client sees it, e.g. to redact secrets; success streams untouched. */
  rewriteErrorBody?(body: Buffer): Buffer;
  agent?: http.Agent;
  /** Called when the upstream cannot be reached, before anything was sent to the client. */
  onUnreachable(err: Error): void;
}

/**
 * Streams a request to an upstream and its answer back, without buffering either body, so
 * long-running and streamed responses (logs, SSE, MCP) flow as they are produced.
 */
export function proxyRequest(req: IncomingMessage, res: ServerResponse, options: ProxyOptions): void {
  const { tls, ...target } = options.upstream as { tls?: boolean };
  const upstreamRequest = (tls ? https : http).request({
    ...target,
    agent: options.agent,
    method: req.method,
    path: options.path,
    headers: options.requestHeaders ? { ...options.requestHeaders(req.headers), ...options.headers } : forwardableHeaders(req.headers, options.headers),
  });
  upstreamRequest.on('response', (upstream) => {
    const status = upstream.statusCode ?? 502;
    const headers = options.responseHeaders ? options.responseHeaders(upstream.headers) : forwardableHeaders(upstream.headers);
    upstream.on('error', () => res.destroy());
    if (status >= 400 && options.rewriteErrorBody) {
      const rewrite = options.rewriteErrorBody;
      readUpTo(upstream, MAX_REWRITTEN_ERROR_BYTES).then(({ body }) => {
        const rewritten = rewrite(body);
        delete headers['content-length'];
        res.writeHead(status, upstream.statusMessage, { ...headers, 'content-length': String(rewritten.length) });
        res.end(rewritten);
      }, () => res.destroy());
      return;
    }
    res.writeHead(status, upstream.statusMessage, headers);
    upstream.pipe(res);
    // Headers leave with the first bytes of the body when those came with them (one write and one
    // wake-up of the client per answer, not two); an answer still without a body after this turn
    // of the event loop (SSE, MCP streams, logs) shows its headers at once.
    setImmediate(() => {
      if (!upstream.readableDidRead && !upstream.readableEnded && !res.writableEnded && !res.destroyed) res.flushHeaders();
    });
  });
  upstreamRequest.on('error', (err) => {
    if (!res.headersSent) options.onUnreachable(err);
    else res.destroy(err);
  });
  // A client that goes away cancels the upstream request (and with it, streamed work).
  res.on('close', () => {
    if (!res.writableFinished) upstreamRequest.destroy();
  });
  if (options.body) upstreamRequest.end(options.body);
  else req.pipe(upstreamRequest);
}

/**
 * Relays an HTTP upgrade (WebSocket) to a Unix socket (or a node listener's TCP address): the client's headers as `proxyRequest`
 * sends them (no credentials), with the upgrade's own kept, then bytes both ways.
 */
export function proxyUpgrade(
  req: IncomingMessage,
  client: Duplex,
  head: Buffer,
  options: Pick<ProxyOptions, 'path' | 'headers' | 'requestHeaders' | 'onUnreachable'> & { target: { path: string } | { host: string; port: number } },
): void {
  const forwarded = options.requestHeaders ? options.requestHeaders(req.headers) : forwardableHeaders(req.headers);
  // Node's HTTP servers refuse a request without Host; the upstream is local.
  const headers = { ...forwarded, host: 'localhost', ...options.headers, connection: 'Upgrade', upgrade: req.headers.upgrade };
  relayUpgrade(client, options.target, { method: req.method ?? 'GET', path: options.path, headers }, head, options.onUnreachable);
}

/** A stream's first `limit` bytes; the rest is read and dropped, and `truncated` says so. */
export async function readUpTo(stream: NodeJS.ReadableStream, limit: number): Promise<{ body: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const bytes = chunk as Buffer;
    if (size < limit) chunks.push(bytes.subarray(0, limit - size));
    size += bytes.length;
  }
  return { body: Buffer.concat(chunks), truncated: size > limit };
}
