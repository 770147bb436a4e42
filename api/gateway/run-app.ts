import http from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { WORKLOAD_ROUTES_CHANNEL } from '../../activities/deployment-control';
import type { HangarConfig } from '../../core/config';
import type { WorkloadKind } from '../../core/workloads/types';
import { ApiError, forbidden, notFound } from '../errors';
import type { AppOptions } from '../fastify';
import { proxyRequest } from './proxy';
import { PrincipalCache } from './principal-cache';
import { WorkloadRouteCache } from './run-routes';
import { buildGatewayBase, proxiedRouteLogLevel } from './shared';

const ALL_METHODS: ('GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS')[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const CLOSE_GRACE_MS = 2_000;
const SINGULAR: Record<WorkloadKind, string> = { agents: 'agent', models: 'model', functions: 'function', jobs: 'job' };

/**
 * The run_url listener, the inference gateway: `/{workspace}/agents/{agent}`,
 * `/{workspace}/models/{model}[/...]` and `/{workspace}/functions/{name}/mcp[/...]`. A request is
 * authenticated for the workspace, routed to the workload's serving revision (cached, so the
 * steady state costs no query beyond the credential check) and streamed both ways over the
 * revision's socket with keep-alive. Platform credentials stay here.
 */
export async function buildRunApp(config: HangarConfig, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = await buildGatewayBase(config, options);
  const routes = new WorkloadRouteCache(app.pg, WORKLOAD_ROUTES_CHANNEL);
  const agents = new Map<string, http.Agent>();
  const principals = new PrincipalCache((headers) => app.authenticator.authenticate(headers));
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

  async function forward(request: FastifyRequest, reply: FastifyReply, kind: WorkloadKind, upstreamPath: string) {
    const { workspace, name } = request.params as { workspace: string; name: string };
    const principal = await principals.principal(request.headers);
    const grant = principal.workspaces.get(workspace);
    if (!grant) throw forbidden(`workspace '${workspace}' does not exist or you are not a member of it`);
    const route = await routes.lookup(grant.id, kind, name);
    if (!route) throw notFound(`${SINGULAR[kind]} '${name}' not found in workspace '${workspace}'`);
    if (!route.socketPath || route.status === 'DELETING') {
      throw new ApiError(503, 'workload_unavailable', `${SINGULAR[kind]} '${name}' is ${route.status}; it serves once a revision is DEPLOYED`);
    }
    const query = request.url.indexOf('?');
    reply.hijack();
    proxyRequest(request.raw, reply.raw, {
      upstream: { socketPath: route.socketPath },
      path: upstreamPath + (query < 0 ? '' : request.url.slice(query)),
      agent: agentFor(route.socketPath),
      onUnreachable: (err) => {
        // The revision may have been replaced since the route was cached: look again next time.
        routes.forget(route.resourceId);
        agents.get(route.socketPath!)?.destroy();
        agents.delete(route.socketPath!);
        reply.raw.writeHead(502, { 'content-type': 'application/json' });
        reply.raw.end(JSON.stringify({ error: 'workload_unreachable', message: `${SINGULAR[kind]} '${name}' did not answer: ${err.message}` }));
      },
    });
  }

  const tail = (request: FastifyRequest) => (request.params as { '*'?: string })['*'] ?? '';
  const proxied = { method: ALL_METHODS, exposeHeadRoute: false, logLevel: proxiedRouteLogLevel(options) };
  app.route({ ...proxied, url: '/:workspace/agents/:name', handler: (req, reply) => forward(req, reply, 'agents', '/') });
  app.route({ ...proxied, url: '/:workspace/models/:name', handler: (req, reply) => forward(req, reply, 'models', '/') });
  app.route({ ...proxied, url: '/:workspace/models/:name/*', handler: (req, reply) => forward(req, reply, 'models', `/${tail(req)}`) });
  app.route({ ...proxied, url: '/:workspace/functions/:name/mcp', handler: (req, reply) => forward(req, reply, 'functions', '/mcp') });
  app.route({ ...proxied, url: '/:workspace/functions/:name/mcp/*', handler: (req, reply) => forward(req, reply, 'functions', `/mcp/${tail(req)}`) });
  return app;
}
