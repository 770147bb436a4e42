import { isIP } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { HangarConfig } from '../../domain/config';
import { requestHost } from '../../domain/custom-domain/custom-domain';
import { ROUTES_CHANNEL } from '../../domain/resource';
import type { AppOptions } from '../fastify';
import { AgentQuery, asyncAgentRequests } from './async-agent-requests';
import { ProviderProxy } from './provider-proxy';
import { PrincipalCache } from './principal-cache';
import { RouteCache } from './route-cache';
import { buildGatewayBase, proxiedRouteLogLevel } from './gateway-base';
import { WorkflowTouches, touchIntervalMs } from '../../store/workflow-touches';
import { WorkloadForwarder, type ForwardingServices } from './workload-forwarder';
import { WorkloadWakes } from './workload-wakes';
import { runOpenApiDocument } from './run-openapi';
import { RemoteNodes } from './remote-nodes';
import { nodeCredentialKey } from '../../domain/nodes/node-credential';
import { loadMasterKey } from '../../store/master-key';

const ALL_METHODS: ('GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS')[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const CLOSE_GRACE_MS = 2_000;

/** Routes, credentials, providers, touches and wakes of the gateway, closed with the app. */
async function forwardingServices(app: FastifyInstance, config: HangarConfig): Promise<ForwardingServices> {
  const routes = new RouteCache(app.pg, ROUTES_CHANNEL, app.secrets);
  const touches = new WorkflowTouches(
    (workflowId, which, at) => app.temporal.workflow.getHandle(workflowId).signal(which, at),
    (workflowId, which, err) => app.log.warn({ err: err.message, workflowId }, `could not signal ${which}`),
    touchIntervalMs(config.workloadIdleSeconds),
  );
  const services: ForwardingServices = {
    routes,
    principals: new PrincipalCache((headers) => app.authenticator.authenticate(headers)),
    providers: new ProviderProxy(config.bodyLimitBytes),
    touches,
    wakes: new WorkloadWakes({ temporal: app.temporal, routes, touches, timeoutSeconds: config.workloadWakeTimeoutSeconds }),
    remote: new RemoteNodes(config.nodeId, nodeCredentialKey(loadMasterKey(config))),
  };
  await routes.listen();
  return services;
}

/** Shutdown: the route listener first, proxied connections after a grace period, then the pools of connections. */
function closeWithApp(app: FastifyInstance, services: ForwardingServices, forwarder: WorkloadForwarder): void {
  app.addHook('preClose', async () => {
    // Before the pool's own onClose: pool.end() waits for the listener's connection.
    await services.routes.close();
    // Proxied connections (long streams, keep-alive clients) get a grace period, then are cut,
    // so a shutdown never waits on a client that keeps its connection open.
    setTimeout(() => app.server.closeAllConnections(), CLOSE_GRACE_MS).unref();
  });
  app.addHook('onClose', async () => {
    forwarder.close();
    services.providers.close();
    services.remote.close();
    services.touches.close();
  });
}

/**
 * Runs before routing by path, for every path: a custom domain's requests never reach the
 * workspace routes. The platform's own host and IP addresses are never custom domains, so
 * requests to run_url cost no lookup.
 */
function routeCustomDomains(app: FastifyInstance, config: HangarConfig, routes: RouteCache, forwarder: WorkloadForwarder): void {
  const runHost = new URL(config.runUrl).hostname;
  app.addHook('onRequest', async (request, reply) => {
    const host = requestHost(request.headers.host);
    if (!host || host === runHost || isIP(host.replace(/^\[(.*)\]$/, '$1'))) return;
    const domain = await routes.domain(host);
    // A domain being deleted routes no more; its host is then like any unknown one.
    if (!domain || domain.status === 'DELETING') return;
    await forwarder.forwardForDomain(request, reply, domain);
  });
}

/**
 * The run_url listener, the inference gateway: `/{workspace}/agents/{agent}`,
 * `/{workspace}/models/{model}[/...]` and `/{workspace}/functions/{name}/mcp[/...]`. A request is
 * authenticated for the workspace, routed to the workload's serving revision (cached, so the
 * steady state costs no query beyond the credential check) and streamed both ways over the
 * revision's socket with keep-alive, or, for a provider model, to its upstream with the
 * connection's API key (workload-forwarder.ts). Platform credentials stay here.
 * `POST .../agents/{agent}?async=true` is answered at once and run by a workflow instead
 * (async-agent-requests.ts).
 *
 * A request whose Host is a custom domain goes to the domain's target instead, whatever its path
 * names: an agent's root, a model's paths, a function's `/mcp[/...]`.
 *
 * A workload with `minScale: 0` is touched (throttled) while it serves, so its deployment
 * workflow knows when it is idle; once scaled to zero, a request is held while the workflow
 * starts it again (one start for every request that arrives meanwhile) and then forwarded.
 * Its OpenAPI document (run-openapi.ts) is at /openapi.json.
 */
export async function buildRunApp(config: HangarConfig, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = await buildGatewayBase(config, options);
  const services = await forwardingServices(app, config);
  const forwarder = new WorkloadForwarder(services);
  closeWithApp(app, services, forwarder);

  // Bodies stream through untouched: no parsing here.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));
  routeCustomDomains(app, config, services.routes, forwarder);

  const document = runOpenApiDocument(config);
  app.get('/openapi.json', { config: { public: true, unversioned: true } }, async () => document);
  const tail = (request: FastifyRequest) => (request.params as { '*'?: string })['*'] ?? '';
  const proxied = { method: ALL_METHODS, exposeHeadRoute: false, logLevel: proxiedRouteLogLevel(options) };
  const asyncRequests = asyncAgentRequests(app, (request) => forwarder.callerOf(request));
  app.route({
    ...proxied,
    url: '/:workspace/agents/:name',
    schema: { querystring: AgentQuery },
    handler: async (req, reply) => {
      const target = await forwarder.targetOf(req, 'agents');
      if ((req.query as { async?: string }).async === 'true') return asyncRequests.accept(req, reply, target);
      // A callback header on a synchronous call is a mistake to report, not a header to pass on.
      asyncRequests.callbackUrlOf(req, false);
      return forwarder.proxyTo(req, reply, 'agents', target, '/');
    },
  });
  app.route({ ...proxied, url: '/:workspace/models/:name', handler: (req, reply) => forwarder.forward(req, reply, 'models', '/') });
  app.route({ ...proxied, url: '/:workspace/models/:name/*', handler: (req, reply) => forwarder.forward(req, reply, 'models', `/${tail(req)}`) });
  app.route({ ...proxied, url: '/:workspace/functions/:name/mcp', handler: (req, reply) => forwarder.forward(req, reply, 'functions', '/mcp') });
  app.route({ ...proxied, url: '/:workspace/functions/:name/mcp/*', handler: (req, reply) => forwarder.forward(req, reply, 'functions', `/mcp/${tail(req)}`) });
  return app;
}
