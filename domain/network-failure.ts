/**
 * How a request that never reached its server is described: a short code and a reason a user
 * can act on, the same on the node's egress (which answers a workload with them) and in the
 * platform's own outbound calls. Only the URL's origin and path are named: a query may carry
 * secrets.
 */
export interface NetworkFailure {
  /** e.g. `connection_refused`, `dns_failed`, `tls_failed`. */
  code: string;
  reason: string;
}

/**
 * Set by the node's egress on an answer that is its own failure to reach the provider (the value
 * is the failure's code), so that a workload tells it apart from the provider's own 502.
 */
export const EGRESS_FAILURE_HEADER = 'hangar-egress-failure';

const DNS_ERRORS = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA']);
const UNREACHABLE_ERRORS = new Set(['EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN', 'ETIMEDOUT']);
const CLOSED_ERRORS = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

const isTlsError = (code: string) => code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || code.includes('CERT') || code === 'EPROTO';

/** What went wrong connecting to `host` (host[:port]), from the error the socket raised. */
export function describeNetworkFailure(err: Error & { code?: string }, host: string): NetworkFailure {
  const code = err.code ?? '';
  if (code === 'ECONNREFUSED') return { code: 'connection_refused', reason: `connection refused by ${host} (ECONNREFUSED)` };
  if (DNS_ERRORS.has(code)) return { code: 'dns_failed', reason: `the host name of ${host} did not resolve (${code})` };
  if (UNREACHABLE_ERRORS.has(code)) return { code: 'unreachable', reason: `${host} is unreachable (${code})` };
  if (CLOSED_ERRORS.has(code)) return { code: 'connection_closed', reason: `${host} closed the connection before answering (${code})` };
  if (isTlsError(code)) return { code: 'tls_failed', reason: `the TLS handshake with ${host} failed: ${err.message}` };
  return { code: 'network_failed', reason: `the connection to ${host} failed: ${err.message}` };
}

/** `origin + path` of a URL: what a failure message names. */
export function urlWithoutQuery(url: URL): string {
  return `${url.origin}${url.pathname}`;
}
