import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { redactSecrets } from '../../domain/integrations/secrets';
import { PROVIDER_CHAT_PATH, upstreamChatBody } from '../../domain/workloads/provider-model';
import { ApiError, badRequest, notFound } from '../../domain/errors';
import { forwardableHeaders, proxyRequest, readUpTo } from '../../runtime/http-proxy';
import type { ProviderRoute } from './route-cache';

/** The client's headers a provider sees: what describes the body and the answer wanted, nothing of who calls. */
const CLIENT_HEADERS_FOR_PROVIDER = new Set(['accept', 'user-agent', 'idempotency-key', 'x-request-id']);

function providerRequestHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => CLIENT_HEADERS_FOR_PROVIDER.has(name)));
}

/** The provider's cookies belong to the platform's session with it, not to the client. */
function providerResponseHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const { 'set-cookie': _cookies, ...rest } = forwardableHeaders(headers);
  return rest;
}

/**
 * The run gateway's side of provider models: `POST .../models/{model}` and
 * `.../models/{model}/chat/completions` go to `<endpoint>/chat/completions` with the connection's
 * API key as the bearer token and `model` set in the body. The answer streams back untouched
 * (SSE included) with the provider's status; an error answer is read whole to take the key out
 * of it, should the provider echo it.
 */
export class ProviderProxy {
  /** Keep-alive connections per provider origin. */
  private readonly agents = new Map<string, http.Agent>();

  constructor(private readonly bodyLimitBytes: number) {}

  async forward(request: FastifyRequest, reply: FastifyReply, route: ProviderRoute, name: string, path: string): Promise<void> {
    if (path !== '/' && path !== `/${PROVIDER_CHAT_PATH}`) {
      throw notFound(`model '${name}' is a provider model: it serves POST .../models/${name}/${PROVIDER_CHAT_PATH} (or the bare model path) only`);
    }
    if (request.method !== 'POST') {
      reply.header('allow', 'POST');
      throw new ApiError(405, 'method_not_allowed', `model '${name}' answers POST only`);
    }
    const apiKey = route.apiKey;
    if (!apiKey) {
      throw new ApiError(503, 'workload_unavailable', `model '${name}' cannot reach its provider: integration connection '${route.connection}' is gone or holds no usable API_KEY`);
    }
    const { body, truncated } = await readUpTo(request.raw, this.bodyLimitBytes);
    if (truncated) throw new ApiError(413, 'payload_too_large', `the request body is larger than the limit of ${this.bodyLimitBytes} bytes`);
    const upstreamBody = upstreamChatBody(body, route.model);
    if ('problem' in upstreamBody) throw badRequest(upstreamBody.problem);

    const url = new URL(`${route.endpoint}/${PROVIDER_CHAT_PATH}`);
    const tls = url.protocol === 'https:';
    reply.hijack();
    proxyRequest(request.raw, reply.raw, {
      upstream: { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port) || (tls ? 443 : 80), tls },
      path: url.pathname,
      agent: this.agentFor(url.origin, tls),
      requestHeaders: providerRequestHeaders,
      responseHeaders: providerResponseHeaders,
      headers: {
        authorization: `Bearer ${apiKey}`,
        'content-type': 'application/json',
        'content-length': String(upstreamBody.body.length),
        // Bytes pass through untouched, so they must be plain: and a compressed stream would arrive in lumps.
        'accept-encoding': 'identity',
      },
      body: upstreamBody.body,
      rewriteErrorBody: (answer) => Buffer.from(redactSecrets(answer.toString('utf8'), [apiKey])),
      onUnreachable: (err) => {
        reply.raw.writeHead(502, { 'content-type': 'application/json' });
        reply.raw.end(JSON.stringify({ error: 'upstream_unreachable', message: `model '${name}': the provider at ${url.origin} did not answer (${err.message})` }));
      },
    });
  }

  close(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }

  private agentFor(origin: string, tls: boolean): http.Agent {
    let agent = this.agents.get(origin);
    if (!agent) {
      const options = { keepAlive: true, maxSockets: 256 };
      agent = tls ? new https.Agent(options) : new http.Agent(options);
      this.agents.set(origin, agent);
    }
    return agent;
  }
}
