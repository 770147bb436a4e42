import http from 'node:http';
import https from 'node:https';
import { PLATFORM_SOCKET_ENV } from '../core/workloads/platform-credential';

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
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        resolve({ status, ok: status >= 200 && status < 300, text: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.end(request.body);
  });
}
