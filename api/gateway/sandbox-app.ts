import http from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { HangarConfig } from '../../domain/config';
import { ROUTES_CHANNEL } from '../../domain/resource';
import { sandboxAddressMatcher } from '../../domain/sandbox/url-template';
import { sandboxWorkflowId } from '../../domain/sandbox/sandbox';
import { reachesInternalRoute } from '../../sandbox-agent/contract/routes';
import type { FreezeState } from '../../runtime/sandbox-runtime';
import { ApiError, forbidden, notFound } from '../../domain/errors';
import type { AppOptions } from '../fastify';
import { PrincipalCache } from './principal-cache';
import { proxyRequest } from '../../runtime/http-proxy';
import { RouteCache } from './route-cache';
import { buildGatewayBase, proxiedRouteLogLevel } from './gateway-base';
import { WorkflowTouches } from '../../store/workflow-touches';

/** What the gateway needs from the sandboxes of its node. */
export interface SandboxNodeAccess {
  socketPath(sandboxId: string): string;
  isFrozen(sandboxId: string): Promise<boolean>;
  /** Thaws it (a no-op when running) and answers the freeze generation it now runs in, and since when (thawedAt). */
  thaw(sandboxId: string): Promise<FreezeState>;
}

const FREEZE_RECHECK_MS = 100;

/**
 * The sandbox gateway: requests to `{sandbox_url}/...` are authenticated against the sandbox's
 * workspace, a sandbox in standby is thawed on the spot (the first call after resume succeeds),
 * and the request streams to the sandbox's own API over its Unix socket. Platform credentials
 * are not forwarded into the sandbox, and the API's internal routes (sandbox-agent/contract/routes.ts)
 * answer 404.
 */
export async function buildSandboxGatewayApp(
  config: HangarConfig,
  node: SandboxNodeAccess,
  options: AppOptions = {},
): Promise<FastifyInstance> {
  const app = await buildGatewayBase(config, options);
  const routes = new RouteCache(app.pg, ROUTES_CHANNEL, app.secrets);
  await routes.listen();
  // Before the pool's own onClose: pool.end() waits for the listener's connection.
  app.addHook('preClose', () => routes.close());
  const matcher = sandboxAddressMatcher(config.sandboxUrlTemplate);
  const agents = new SandboxAgents();
  const principals = new PrincipalCache((headers) => app.authenticator.authenticate(headers));
  const touches = new WorkflowTouches(
    (workflowId, which, at, generation) =>
      generation === undefined ? app.temporal.workflow.getHandle(workflowId).signal(which, at) : app.temporal.workflow.getHandle(workflowId).signal(which, at, generation),
    (workflowId, which, err) => app.log.warn({ err: err.message, workflowId }, `could not signal ${which}`),
  );

  // Bodies stream through untouched: no parsing here.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));

  async function handle(request: FastifyRequest, reply: FastifyReply) {
    const [pathOnly, query] = splitQuery(request.url);
    const address = matcher.match(request.headers.host ?? '', pathOnly);
    if (!address?.values.workspace_id || !address.values.sandbox_id) throw notFound(`no sandbox at ${pathOnly}`);
    // The agent's internal routes serve the host alone, over the socket; from here they do not exist.
    if (reachesInternalRoute(address.rest)) throw notFound(`no such endpoint: ${request.method} ${address.rest}`);
    const workspace = address.values.workspace_id;
    const name = address.values.sandbox_id;

    const principal = await principals.principal(request.headers);
    const grant = principal.workspaces.get(workspace);
    if (!grant) throw forbidden(`workspace '${workspace}' does not exist or you are not a member of it`);
    const route = await routes.sandbox(grant.id, name);
    if (!route) throw notFound(`sandbox '${name}' not found in workspace '${workspace}'`);
    if (route.status !== 'DEPLOYED') {
      throw new ApiError(503, 'sandbox_unavailable', `sandbox '${name}' is ${route.status}`);
    }

    const workflowId = sandboxWorkflowId(workspace, name);
    /**
     * The thaw's generation goes with `resumed`: the workflow compares it with the freeze it made,
     * so a resume heard before the freeze's answer still ends that freeze.
     */
    const resume = async () => {
      const thawed = await node.thaw(route.resourceId);
      touches.resumed(workflowId, thawed.thawedAt ?? Date.now(), thawed.generation);
    };
    if (await node.isFrozen(route.resourceId)) {
      await resume();
      // Idle connections kept across the freeze are closed by the sandbox as soon as it thaws.
      agents.reset(route.resourceId);
    } else {
      touches.touch(workflowId);
    }

    reply.hijack();
    // The node may have frozen the sandbox between our check and the request reaching it (its
    // standby check and this gateway do not share a lock): a request still unanswered soon after
    // finds it frozen and thaws it.
    const recheck = setTimeout(() => {
      if (reply.raw.headersSent) return;
      node
        .isFrozen(route.resourceId)
        .then(async (frozen) => {
          if (frozen) await resume();
        })
        .catch(() => undefined);
    }, FREEZE_RECHECK_MS);
    reply.raw.once('close', () => clearTimeout(recheck));
    proxyRequest(request.raw, reply.raw, {
      upstream: { socketPath: node.socketPath(route.resourceId) },
      path: address.rest + (query ? `?${query}` : ''),
      agent: agents.for(route.resourceId),
      onUnreachable: (err) => {
        // It may have been removed since its route was cached: look again next time.
        routes.forget(route.resourceId);
        reply.raw.writeHead(502, { 'content-type': 'application/json' });
        reply.raw.end(JSON.stringify({ error: 'sandbox_unreachable', message: `the sandbox did not answer: ${err.message}` }));
      },
    });
  }

  app.route({ method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'], url: '/*', exposeHeadRoute: false, logLevel: proxiedRouteLogLevel(options), handler: handle });
  app.addHook('onClose', async () => {
    agents.close();
    touches.close();
  });
  return app;
}

/**
 * Keep-alive connections per sandbox: a sandbox that resumes from standby closes the idle
 * connections it held, so they are dropped with the sandbox's own pool instead of failing a request.
 */
class SandboxAgents {
  private readonly agents = new Map<string, http.Agent>();
  private static readonly MAX = 1_000;

  for(sandboxId: string): http.Agent {
    let agent = this.agents.get(sandboxId);
    if (agent) {
      // Refresh its place: the map's order is the eviction order.
      this.agents.delete(sandboxId);
    } else {
      agent = new http.Agent({ keepAlive: true, maxSockets: 64, timeout: 4_000 });
      if (this.agents.size >= SandboxAgents.MAX) this.reset(this.agents.keys().next().value as string);
    }
    this.agents.set(sandboxId, agent);
    return agent;
  }

  reset(sandboxId: string): void {
    this.agents.get(sandboxId)?.destroy();
    this.agents.delete(sandboxId);
  }

  close(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

function splitQuery(url: string): [string, string] {
  const i = url.indexOf('?');
  return i < 0 ? [url, ''] : [url.slice(0, i), url.slice(i + 1)];
}
