import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { HOP_BY_HOP_HEADERS, forwardableHeaders, proxyRequest } from '../http-proxy';
import { EGRESS_FAILURE_HEADER, describeNetworkFailure, urlWithoutQuery } from '../../domain/network-failure';

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

function fail(res: ServerResponse, status: number, error: string, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ error, message }));
}

/** The provider could not be reached: 502, saying where and why, marked as the egress's own answer. */
function unreachable(res: ServerResponse, url: URL, err: Error): void {
  const failure = describeNetworkFailure(err, url.host);
  fail(res, 502, `egress_${failure.code}`, `could not reach ${urlWithoutQuery(url)}: ${failure.reason}`, { [EGRESS_FAILURE_HEADER]: failure.code });
}

/** Only one hop's headers stay behind: the workload's own credentials for the provider go out. */
const hopHeaders = (headers: IncomingHttpHeaders) => forwardableHeaders(headers, undefined, HOP_BY_HOP_HEADERS);
/** The failure marker is the egress's alone: a provider's answer never carries it to the workload. */
const RESPONSE_DROPPED_HEADERS: ReadonlySet<string> = new Set([...HOP_BY_HOP_HEADERS, EGRESS_FAILURE_HEADER]);
const providerAnswerHeaders = (headers: IncomingHttpHeaders) => forwardableHeaders(headers, undefined, RESPONSE_DROPPED_HEADERS);

/** Streams one allow-listed request out and its answer back. */
export function forwardEgress(req: IncomingMessage, res: ServerResponse, allowedOrigins: readonly string[]): void {
  const decision = egressDecision(req.url ?? '', allowedOrigins);
  if ('denied' in decision) {
    req.resume();
    fail(res, 403, 'egress_denied', decision.denied);
    return;
  }
  const { url } = decision;
  const tls = url.protocol === 'https:';
  proxyRequest(req, res, {
    upstream: { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port) || (tls ? 443 : 80), tls },
    path: `${url.pathname}${url.search}`,
    requestHeaders: hopHeaders,
    responseHeaders: providerAnswerHeaders,
    onUnreachable: (err) => unreachable(res, url, err),
  });
}
