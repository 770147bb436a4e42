import http from 'node:http';
import https from 'node:https';
import { EGRESS_FAILURE_HEADER, describeNetworkFailure, urlWithoutQuery } from '../domain/network-failure';
import { PLATFORM_SOCKET_ENV } from '../domain/workloads/platform-credential';

export interface OutboundResponse {
  status: number;
  ok: boolean;
  text: string;
}

export interface OutboundRequest {
  method: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs: number;
}

/** A request that did not get an answer in time. */
export class OutboundTimeoutError extends Error {
  override name = 'TimeoutError';
}

/**
 * A request that reached no server: refused, a name that did not resolve, a failed TLS
 * handshake... either from here or, inside a workload, from the node's egress. The message names
 * the URL (without its query) and what failed.
 */
export class OutboundNetworkError extends Error {
  override name = 'OutboundNetworkError';

  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

/** The egress's own failure (its 502 body's message says where and why), or undefined for any other answer. */
function egressFailure(res: http.IncomingMessage, body: string): OutboundNetworkError | undefined {
  const code = res.headers[EGRESS_FAILURE_HEADER];
  if (typeof code !== 'string') return undefined;
  let message = '';
  try {
    message = String((JSON.parse(body) as { message?: unknown }).message ?? '');
  } catch {
    // A malformed answer still says that the egress failed.
  }
  return new OutboundNetworkError(message || `the platform's egress failed (${code})`, code);
}

/**
 * An HTTP request from the platform's integration code to a provider. Inside a hosted workload
 * (no network of its own) it goes through the platform socket as a forward-proxy request, and
 * the node makes it if the provider is on the workload's allow-list; on the host it goes direct.
 * Answers with the whole (small, JSON) body.
 */
export function outboundRequest(url: string, request: OutboundRequest, env: NodeJS.ProcessEnv = process.env): Promise<OutboundResponse> {
  const target = new URL(url);
  const socketPath = env[PLATFORM_SOCKET_ENV];
  const headers = { ...request.headers, ...(request.body !== undefined ? { 'content-length': String(Buffer.byteLength(request.body)) } : {}) };
  return new Promise((resolve, reject) => {
    const req = socketPath
      ? http.request({ socketPath, method: request.method, path: target.href, headers: { ...headers, host: target.host } })
      : (target.protocol === 'https:' ? https : http).request(target, { method: request.method, headers });
    req.setTimeout(request.timeoutMs, () => req.destroy(new OutboundTimeoutError(`no answer from ${target.origin} within ${request.timeoutMs} ms`)));
    req.on('error', (err: Error & { code?: string }) => {
      if (err instanceof OutboundTimeoutError) return reject(err);
      // Through the socket, only the socket itself can fail here: the egress answers for the provider.
      const failure = socketPath
        ? { code: 'platform_socket_failed', reason: `the platform socket failed: ${err.code ?? err.message}` }
        : describeNetworkFailure(err, target.host);
      reject(new OutboundNetworkError(`could not reach ${urlWithoutQuery(target)}: ${failure.reason}`, failure.code));
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        const text = Buffer.concat(chunks).toString('utf8');
        const failed = socketPath ? egressFailure(res, text) : undefined;
        if (failed) reject(failed);
        else resolve({ status, ok: status >= 200 && status < 300, text });
      });
    });
    req.end(request.body);
  });
}
