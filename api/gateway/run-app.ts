import http from 'node:http';
import { isIP } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { HangarConfig } from '../../domain/config';
import { CUSTOM_DOMAIN_TARGETS, domainUpstreamPath, requestHost } from '../../domain/custom-domain/custom-domain';
import { ROUTES_CHANNEL } from '../../domain/resource';
import { deploymentWorkflowId, type WorkloadKind } from '../../domain/workloads/workload';
import { ApiError, forbidden, notFound } from '../../domain/errors';
import type { AppOptions } from '../fastify';
import { AgentQuery, asyncAgentRequests } from './async-agent-requests';
import { ProviderProxy } from './provider-proxy';
import { proxyRequest } from '../../runtime/http-proxy';
import { PrincipalCache } from './principal-cache';
import { RouteCache, type DomainRoute, type GatewayCaller, type WorkloadTarget } from './route-cache';
import { buildGatewayBase, proxiedRouteLogLevel } from './gateway-base';
import { WorkflowTouches, touchIntervalMs } from '../../store/workflow-touches';
import { WorkloadWakes } from './workload-wakes';

const ALL_METHODS: ('GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS')[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const CLOSE_GRACE_MS = 2_000;
const SINGULAR: Record<WorkloadKind, string> = { agents: 'agent', models: 'model', functions: 'function', jobs: 'job' };

/**
 * The run_url listener, the inference gateway: `/{workspace}/agents/{agent}`,
 * `/{workspace}/models/{model}[/...]` and `/{workspace}/functions/{name}/mcp[/...]`. A request is
 * authenticated for the workspace, routed to the workload's serving revision (cached, so the
 * steady state costs no query beyond the credential check) and streamed both ways over the
 * revision's socket with keep-alive, or, for a provider model, to its upstream with the
 * connection's API key. Platform credentials stay here. `POST .../agents/{agent}?async=true` is
 * answered at once and run by a workflow instead (async-agent-requests.ts).
 *
 * A request whose Host is a custom domain goes to the domain's target instead, whatever its path
 * names: an agent's root, a model's paths, a function's `/mcp[/...]`.
 *
 * A workload with `minScale: 0` is touched (throttled) while it serves, so its deployment
 * workflow knows when it is idle; once scaled to zero, a request is held while the workflow
 * starts it again (one start for every request that arrives meanwhile) and then forwarded.
 */
export async function buildRunApp(config: HangarConfig, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = await buildGatewayBase(config, options);
  const routes = new RouteCache(app.pg, ROUTES_CHANNEL, app.secrets);
  const providers = new ProviderProxy(config.bodyLimitBytes);
  const agents = new Map<string, http.Agent>();
  const principals = new PrincipalCache((headers) => app.authenticator.authenticate(headers));
  const touches = new WorkflowTouches(
    (workflowId, which, at) => app.temporal.workflow.getHandle(workflowId).signal(which, at),
    (workflowId, which, err) => app.log.warn({ err: err.message, workflowId }, `could not signal ${which}`),
    touchIntervalMs(config.workloadIdleSeconds),
  );
  const wakes = new WorkloadWakes({ temporal: app.temporal, routes, touches, timeoutSeconds: config.workloadWakeTimeoutSeconds });
  await routes.listen();
  app.addHook('preClose', async () => {
    // Before the pool's own onClose: pool.end() waits for the listener's connection.
    await routes.close();
    // Proxied connections (long streams, keep-alive clients) get a grace period, then are cut,
    // so a shutdown never waits on a client that keeps its connection open.
    setTimeout(() => app.server.closeAllConnections(), CLOSE_GRACE_MS).unref();
  });
  app.addHook('onClose', async () => {
    for (const agent of agents.values()) agent.destroy();
    providers.close();
    touches.close();
  });

  // Bodies stream through untouched: no parsing here.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));

  function agentFor(socketPath: string): http.Agent {
    let agent = agents.get(socketPath);
    if (!agent) {
      agent = new http.Agent({ keepAlive: true, maxSockets: 256, timeout: 30_000 });
      agents.set(socketPath, agent);
    }
    return agent;
  }

  async function callerOf(request: FastifyRequest): Promise<GatewayCaller> {
    const { workspace } = request.params as { workspace: string };
    const principal = await principals.principal(request.headers);
    const grant = principal.workspaces.get(workspace);
    if (!grant) throw forbidden(`workspace '${workspace}' does not exist or you are not a member of it`);
    return { principal, grant };
  }

  /** The checks every call of a workload passes, sync or async: 401/403, unknown 404, not serving 503. */
  async function targetOf(request: FastifyRequest, kind: WorkloadKind): Promise<WorkloadTarget> {
    return resolveTarget(await callerOf(request), kind, (request.params as { name: string }).name);
  }

  async function resolveTarget(caller: GatewayCaller, kind: WorkloadKind, name: string): Promise<WorkloadTarget> {
    const route = await routes.lookup(caller.grant.id, kind, name);
    if (!route) throw notFound(`${SINGULAR[kind]} '${name}' not found in workspace '${caller.grant.name}'`);
    if (route.status !== 'DELETING') {
      const { resourceId, status, provider, socketPath, scale } = route;
      if (provider) return { ...caller, name, route: { resourceId, status, provider } };
      if (socketPath) return { ...caller, name, route: { resourceId, status, socketPath, scale } };
    }
    throw new ApiError(503, 'workload_unavailable', `${SINGULAR[kind]} '${name}' is ${route.status}; it serves once a revision is DEPLOYED`);
  }

  async function proxyTo(request: FastifyRequest, reply: FastifyReply, kind: WorkloadKind, { name, grant, route }: WorkloadTarget, upstreamPath: string) {
    if (route.provider) return providers.forward(request, reply, route.provider, name, upstreamPath);
    let socketPath = route.socketPath;
    let release: (() => void) | undefined;
    if (route.scale) {
      const workflowId = deploymentWorkflowId(grant.name, kind, name);
      if (route.scale === 'SCALED_TO_ZERO') socketPath = await wakes.wake(route.resourceId, { workspaceId: grant.id, kind, name }, workflowId, `${SINGULAR[kind]} '${name}'`);
      release = touches.hold(workflowId);
    }
    const query = request.url.indexOf('?');
    reply.hijack();
    if (release) reply.raw.once('close', release);
    proxyRequest(request.raw, reply.raw, {
      upstream: { socketPath },
      path: upstreamPath + (query < 0 ? '' : request.url.slice(query)),
      agent: agentFor(socketPath),
      onUnreachable: (err) => {
        // The revision may have been replaced (or scaled to zero) since the route was cached: look again next time.
        routes.forget(route.resourceId);
        agents.get(socketPath)?.destroy();
        agents.delete(socketPath);
        reply.raw.writeHead(502, { 'content-type': 'application/json' });
        reply.raw.end(JSON.stringify({ error: 'workload_unreachable', message: `${SINGULAR[kind]} '${name}' did not answer: ${err.message}` }));
      },
    });
  }

  async function forward(request: FastifyRequest, reply: FastifyReply, kind: WorkloadKind, upstreamPath: string) {
    return proxyTo(request, reply, kind, await targetOf(request, kind), upstreamPath);
  }

  /** A request to a custom domain: the same credential check, for the domain's workspace, then its target. */
  async function forwardForDomain(request: FastifyRequest, reply: FastifyReply, domain: DomainRoute) {
    const principal = await principals.principal(request.headers);
    const grant = principal.workspaces.get(domain.workspace);
    if (grant?.id !== domain.workspaceId) throw forbidden('you are not a member of the workspace that owns this domain');
    if (domain.status !== 'DEPLOYED') throw new ApiError(503, 'domain_unavailable', `custom domain '${domain.name}' is ${domain.status}; it routes once DEPLOYED`);
    const query = request.url.indexOf('?');
    const pathOnly = query < 0 ? request.url : request.url.slice(0, query);
    const upstreamPath = domainUpstreamPath(domain.target.kind, pathOnly);
    if (upstreamPath === undefined) throw notFound(`no route for ${request.method} ${pathOnly} on a domain serving ${domain.target.kind} '${domain.target.name}'`);
    const kind = CUSTOM_DOMAIN_TARGETS[domain.target.kind];
    await proxyTo(request, reply, kind, await resolveTarget({ principal, grant }, kind, domain.target.name), upstreamPath);
  }

  // Runs before routing by path, for every path: a custom domain's requests never reach the
  // workspace routes. The platform's own host and IP addresses are never custom domains, so
  // requests to run_url cost no lookup.
  const runHost = new URL(config.runUrl).hostname;
  app.addHook('onRequest', async (request, reply) => {
    const host = requestHost(request.headers.host);
    if (!host || host === runHost || isIP(host.replace(/^\[(.*)\]$/, '$1'))) return;
    const domain = await routes.domain(host);
    // A domain being deleted routes no more; its host is then like any unknown one.
    if (!domain || domain.status === 'DELETING') return;
    await forwardForDomain(request, reply, domain);
  });

  const tail = (request: FastifyRequest) => (request.params as { '*'?: string })['*'] ?? '';
  const proxied = { method: ALL_METHODS, exposeHeadRoute: false, logLevel: proxiedRouteLogLevel(options) };
  const asyncRequests = asyncAgentRequests(app, callerOf);
  app.route({
    ...proxied,
    url: '/:workspace/agents/:name',
    schema: { querystring: AgentQuery },
    handler: async (req, reply) => {
      const target = await targetOf(req, 'agents');
      if ((req.query as { async?: string }).async === 'true') return asyncRequests.accept(req, reply, target);
      // A callback header on a synchronous call is a mistake to report, not a header to pass on.
      asyncRequests.callbackUrlOf(req, false);
      return proxyTo(req, reply, 'agents', target, '/');
    },
  });
  app.route({ ...proxied, url: '/:workspace/models/:name', handler: (req, reply) => forward(req, reply, 'models', '/') });
  app.route({ ...proxied, url: '/:workspace/models/:name/*', handler: (req, reply) => forward(req, reply, 'models', `/${tail(req)}`) });
  app.route({ ...proxied, url: '/:workspace/functions/:name/mcp', handler: (req, reply) => forward(req, reply, 'functions', '/mcp') });
  app.route({ ...proxied, url: '/:workspace/functions/:name/mcp/*', handler: (req, reply) => forward(req, reply, 'functions', `/mcp/${tail(req)}`) });
  return app;
}
