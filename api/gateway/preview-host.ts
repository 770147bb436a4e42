import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, notFound } from '../../domain/errors';
import type { PortTarget } from '../../domain/sandbox/port-path';
import {
  PREVIEW_TOKEN_HEADER,
  PREVIEW_TOKEN_QUERY_PARAMETERS,
  SANDBOX_API_PORT,
  isPreflight,
  preflightHeaders,
  previewTokenDigest,
  type PreviewSpec,
} from '../../domain/sandbox/preview';
import { sandboxWorkflowId } from '../../domain/sandbox/sandbox';
import { sandboxAddressMatcher, type SandboxAddressMatcher } from '../../domain/sandbox/url-template';
import { forwardableHeaders, HOP_BY_HOP_HEADERS } from '../../runtime/http-proxy';
import { reachesInternalRoute } from '../../sandbox-agent/contract/routes';
import type { PreviewRoute, SandboxPreviewStore } from '../../store/sandbox-previews';
import { PreviewRouteCache } from './preview-routes';
import type { RouteCache } from './route-cache';
import { readySandbox } from './sandbox-readiness';
import type { SandboxUpstream } from './sandbox-ports';
import type { SandboxAt, SandboxTarget } from './sandbox-target';

/** A request's preview, as its address names it: the URL label and the rest of the path. */
export interface PreviewAddress {
  label: string;
  rest: string;
}

/** What the preview host is given by the sandbox gateway it lives in. */
export interface PreviewHostDeps {
  store: SandboxPreviewStore;
  routes: RouteCache;
  /** The preview URL template (`{preview_id}` the label). */
  template: string;
  startWaitSeconds: number;
  /** The upstream of a port of a running sandbox (its forwarder), as `{sandbox_url}/port/{port}` has it. */
  portUpstream(sandbox: SandboxAt, target: PortTarget): Promise<SandboxUpstream>;
  /** The upstream of the sandbox's own API. */
  apiUpstream(sandbox: SandboxAt, path: string): SandboxUpstream;
  /** Serves a request (or relays an upgrade) for a sandbox, thawed if it stands by, touched otherwise. */
  serve(request: FastifyRequest, reply: FastifyReply, target: SandboxTarget): Promise<void>;
}

/** Never sent into the sandbox: one hop's headers, the platform's credential and the preview's token. */
const DROPPED_TO_PORT: ReadonlySet<string> = new Set([...HOP_BY_HOP_HEADERS, 'x-service-authorization', PREVIEW_TOKEN_HEADER]);
/** The sandbox API takes no caller credential at all, as through the sandbox gateway. */
const DROPPED_TO_API: ReadonlySet<string> = new Set([...DROPPED_TO_PORT, 'authorization']);

function tokenOf(headers: IncomingHttpHeaders, query: string): string | undefined {
  const header = headers[PREVIEW_TOKEN_HEADER];
  if (typeof header === 'string' && header !== '') return header;
  if (query === '') return undefined;
  const params = new URLSearchParams(query);
  for (const name of PREVIEW_TOKEN_QUERY_PARAMETERS) {
    const value = params.get(name);
    if (value) return value;
  }
  return undefined;
}

/** The query the app sees: the caller's, without the preview's token. */
function forwardedQuery(query: string): string {
  if (!PREVIEW_TOKEN_QUERY_PARAMETERS.some((name) => query.includes(name))) return query;
  const params = new URLSearchParams(query);
  for (const name of PREVIEW_TOKEN_QUERY_PARAMETERS) params.delete(name);
  return params.toString();
}

/** The preview's response headers on every answer, where the app did not set the header itself. */
function withResponseHeaders(upstream: IncomingHttpHeaders, extra: Record<string, string> | undefined): IncomingHttpHeaders {
  const headers = forwardableHeaders(upstream);
  for (const [name, value] of Object.entries(extra ?? {})) {
    const lower = name.toLowerCase();
    if (headers[lower] === undefined) headers[lower] = value;
  }
  return headers;
}

function headerRules(spec: PreviewSpec): Pick<SandboxUpstream, 'requestHeaders' | 'responseHeaders'> {
  const dropped = spec.port === SANDBOX_API_PORT ? DROPPED_TO_API : DROPPED_TO_PORT;
  return {
    requestHeaders: (headers) => forwardableHeaders(headers, spec.requestHeaders, dropped),
    responseHeaders: (headers) => withResponseHeaders(headers, spec.responseHeaders),
  };
}

/**
 * The preview host: requests to a preview URL reach a port of the sandbox (or, on port 443, its
 * API) without a platform credential. A public preview lets anyone through; a private one wants
 * one of its tokens (header or query). Expiries, the preview's and the token's, are compared with
 * the clock on every request, so they stop working the moment they pass. CORS preflights are
 * answered here, without a token, as the preview's response headers say. The sandbox is then
 * served as through the sandbox gateway: held while it starts, thawed from standby on the spot.
 */
export class PreviewHost {
  private readonly matcher: SandboxAddressMatcher;
  private readonly previews: PreviewRouteCache;

  constructor(private readonly deps: PreviewHostDeps) {
    this.matcher = sandboxAddressMatcher(deps.template);
    this.previews = new PreviewRouteCache(deps.store);
    deps.routes.onNotice((id) => this.previews.forget(id));
  }

  /** The preview a request is addressed to, or undefined when it is no preview URL. */
  match(host: string, path: string): PreviewAddress | undefined {
    const address = this.matcher.match(host, path);
    const label = address?.values.preview_id;
    return label ? { label, rest: address.rest } : undefined;
  }

  async serve(request: FastifyRequest, reply: FastifyReply, address: PreviewAddress, query: string): Promise<void> {
    const route = await this.liveRoute(address.label);
    if (isPreflight(request.method, request.headers)) {
      reply.code(204).headers(preflightHeaders(route.spec.responseHeaders)).send();
      return;
    }
    // An upgrade (a WebSocket, e.g. a dev server's live reload) comes here too, and is relayed.
    await this.deps.serve(request, reply, await this.targetOf(route, { method: request.method, headers: request.headers }, address, query));
  }

  /** The preview at a label, unless it expired (404 unknown, 410 expired). */
  private async liveRoute(label: string): Promise<PreviewRoute> {
    const route = await this.previews.get(label);
    if (!route) throw new ApiError(404, 'preview_not_found', `no preview '${label}'`);
    if (route.expiresAt !== undefined && route.expiresAt <= Date.now()) {
      throw new ApiError(410, 'preview_expired', `preview '${label}' expired at ${new Date(route.expiresAt).toISOString()}`);
    }
    return route;
  }

  /** Where a request the preview admits goes (401 without a valid token on a private one), once its sandbox runs or stands by. */
  private async targetOf(route: PreviewRoute, request: { method: string; headers: IncomingHttpHeaders }, address: PreviewAddress, query: string): Promise<SandboxTarget> {
    if (!route.spec.public) await this.admit(route, address.label, tokenOf(request.headers, query), Date.now());
    const port = route.spec.port;
    if (port === SANDBOX_API_PORT && reachesInternalRoute(address.rest)) throw notFound(`no such endpoint: ${request.method} ${address.rest}`);
    const sandbox = await this.runningSandbox(route);
    const forwarded = forwardedQuery(query);
    const path = address.rest + (forwarded ? `?${forwarded}` : '');
    const rules = headerRules(route.spec);
    return {
      ...sandbox,
      workflowId: sandboxWorkflowId(route.workspace, route.sandboxName),
      upstream: async () => ({
        ...(port === SANDBOX_API_PORT ? this.deps.apiUpstream(sandbox, path) : await this.deps.portUpstream(sandbox, { port, path })),
        ...rules,
      }),
    };
  }

  /** 401 unless `token` is one of the preview's and still valid; a token unknown to the cached route is looked up once more. */
  private async admit(route: PreviewRoute, label: string, token: string | undefined, now: number): Promise<void> {
    if (token === undefined) {
      throw new ApiError(401, 'preview_token_required', `preview '${label}' is private: send a token in the X-Service-Preview-Token header or the ${PREVIEW_TOKEN_QUERY_PARAMETERS[0]} query parameter`);
    }
    const digest = previewTokenDigest(token);
    let expiresAt = route.tokens.get(digest);
    if (expiresAt === undefined) expiresAt = (await this.previews.load(label))?.tokens.get(digest);
    if (expiresAt === undefined) throw new ApiError(401, 'invalid_preview_token', `the token is not one of preview '${label}'`);
    if (expiresAt <= now) throw new ApiError(401, 'preview_token_expired', `the token of preview '${label}' expired at ${new Date(expiresAt).toISOString()}`);
  }

  /** The preview's sandbox once it runs or stands by: held while it starts, as any gateway request. */
  private async runningSandbox(route: PreviewRoute): Promise<SandboxAt> {
    const { routes, startWaitSeconds } = this.deps;
    const sandbox = await routes.sandbox(route.workspaceId, route.sandboxName);
    if (sandbox?.resourceId !== route.sandboxId) throw notFound(`sandbox '${route.sandboxName}' of this preview no longer exists`);
    const ready = await readySandbox(routes, { workspaceId: route.workspaceId, name: route.sandboxName, route: sandbox }, startWaitSeconds);
    return { resourceId: ready.resourceId, node: ready.node };
  }
}
