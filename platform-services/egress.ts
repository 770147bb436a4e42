import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import { HOP_BY_HOP_HEADERS, forwardableHeaders } from '../api/gateway/proxy';

/**
 * Allow-listed outbound HTTP for a workload whose sandbox has no network. The workload sends
 * an ordinary forward-proxy request (absolute URL as the request target) to its platform
 * socket; the node makes the request, with TLS from the node, only to the origins the
 * workload's policy names. Nothing else leaves: no other host, port or scheme.
 */
export function egressDecision(target: string, allowedOrigins: readonly string[]): { url: URL } | { denied: string } {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return { denied: `'${target.slice(0, 200)}' is not an absolute URL` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { denied: `scheme ${url.protocol} is not allowed` };
  if (url.username || url.password) return { denied: 'URLs with credentials are not allowed' };
  if (!allowedOrigins.includes(url.origin)) return { denied: `${url.origin} is not in this workload's egress allow-list` };
  return { url };
}

/** The origins of a set of endpoint URLs, for an allow-list. */
export function originsOf(urls: readonly string[]): string[] {
  return [...new Set(urls.map((u) => new URL(u).origin))];
}

const EGRESS_TIMEOUT_MS = 60_000;

function fail(res: ServerResponse, status: number, error: string, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error, message }));
}

/** Streams one allow-listed request out and its answer back. */
export function forwardEgress(req: IncomingMessage, res: ServerResponse, allowedOrigins: readonly string[]): void {
  const decision = egressDecision(req.url ?? '', allowedOrigins);
  if ('denied' in decision) {
    req.resume();
    fail(res, 403, 'egress_denied', decision.denied);
    return;
  }
  const { url } = decision;
  const transport = url.protocol === 'https:' ? https : http;
  const upstreamRequest = transport.request(url, {
    method: req.method,
    headers: forwardableHeaders(req.headers, HOP_BY_HOP_HEADERS),
    timeout: EGRESS_TIMEOUT_MS,
  });
  upstreamRequest.on('response', (upstream) => {
    res.writeHead(upstream.statusCode ?? 502, upstream.statusMessage, forwardableHeaders(upstream.headers, HOP_BY_HOP_HEADERS));
    upstream.pipe(res);
    upstream.on('error', () => res.destroy());
  });
  upstreamRequest.on('timeout', () => upstreamRequest.destroy(new Error(`no answer within ${EGRESS_TIMEOUT_MS / 1000} s`)));
  upstreamRequest.on('error', (err) => fail(res, 502, 'egress_failed', `${url.origin}: ${err.message}`));
  res.on('close', () => {
    if (!res.writableFinished) upstreamRequest.destroy();
  });
  req.pipe(upstreamRequest);
}
