import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { HOP_BY_HOP_HEADERS, forwardableHeaders, proxyRequest } from '../http-proxy';
import { EGRESS_FAILURE_HEADER, describeNetworkFailure, urlWithoutQuery } from '../../domain/network-failure';
import { egressPolicy, hostVerdict, type SandboxNetworkSpec } from '../../domain/sandbox/network-policy';

/**
 * Where a workload may reach through its platform socket: the hosts as a `spec.network`, decided
 * by the sandboxes' own policy code (egressPolicy, hostVerdict), and the schemes and ports its
 * providers' URLs use ('https:443', 'http:4000'), which a domain rule does not say.
 *
 * Why the integration servers keep this path rather than a network namespace with their
 * providers as `spec.network.allowedDomains`: it works on nodes without sandbox networking (the
 * default), the providers' endpoints are the operator's configuration and may sit at addresses a
 * sandbox's egress always refuses (a private or loopback address, tests' stand-ins), and failures
 * come back as the 502 `egress_<cause>` answers the servers report. The decision about names is
 * the one code all the same.
 */
export interface PlatformEgress {
  network: SandboxNetworkSpec;
  endpoints: string[];
}

/** No egress through the platform socket (user workloads: theirs is their own `spec.network`). */
export const NO_PLATFORM_EGRESS: PlatformEgress = { network: { internet: false }, endpoints: [] };

const schemeAndPort = (url: URL) => `${url.protocol}${url.port || (url.protocol === 'https:' ? 443 : 80)}`;
const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, '');

/** The egress of a set of provider endpoint URLs: their hosts as allowedDomains, their schemes and ports. */
export function providerEgress(urls: readonly string[]): PlatformEgress {
  const parsed = urls.map((u) => new URL(u));
  return { network: { allowedDomains: [...new Set(parsed.map(hostOf))] }, endpoints: [...new Set(parsed.map(schemeAndPort))] };
}

/**
 * Allow-listed outbound HTTP for a workload through its platform socket. The workload sends an
 * ordinary forward-proxy request (absolute URL as the request target); the node makes the
 * request, with TLS from the node, only to what its egress allows. Nothing else leaves.
 */
export function egressDecision(target: string, egress: PlatformEgress): { url: URL } | { denied: string } {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return { denied: `'${target.slice(0, 200)}' is not an absolute URL` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { denied: `scheme ${url.protocol} is not allowed` };
  if (url.username || url.password) return { denied: 'URLs with credentials are not allowed' };
  const verdict = hostVerdict(egressPolicy(egress.network), hostOf(url));
  if (!verdict.allowed) return { denied: `${url.origin} is not in this workload's egress allow-list (${verdict.rule})` };
  if (!egress.endpoints.includes(schemeAndPort(url))) return { denied: `${url.origin} is not in this workload's egress allow-list (${url.protocol} on port ${schemeAndPort(url).slice(url.protocol.length)})` };
  return { url };
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
export function forwardEgress(req: IncomingMessage, res: ServerResponse, egress: PlatformEgress): void {
  const decision = egressDecision(req.url ?? '', egress);
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
