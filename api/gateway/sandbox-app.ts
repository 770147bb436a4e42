import http from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { HangarConfig } from '../../domain/config';
import { ROUTES_CHANNEL } from '../../domain/resource';
import { sandboxAddressMatcher, type SandboxAddressMatcher } from '../../domain/sandbox/url-template';
import { sandboxWorkflowId } from '../../domain/sandbox/sandbox';
import { reachesInternalRoute } from '../../sandbox-agent/contract/routes';
import { refuseUpgrade } from '../../runtime/upgrade-relay';
import type { FreezeState } from '../../runtime/sandbox-runtime';
import { forbidden, notFound } from '../../domain/errors';
import type { AppOptions } from '../fastify';
import { PrincipalCache } from './principal-cache';
import { proxyRequest, proxyUpgrade } from '../../runtime/http-proxy';
import { RouteCache } from './route-cache';
import { readySandbox } from './sandbox-readiness';
import { buildGatewayBase, proxiedRouteLogLevel } from './gateway-base';
import { WorkflowTouches } from '../../store/workflow-touches';
import { sandboxOpenApiDocument } from './sandbox-openapi';
import { routeUpgrades, upgradeOf } from './upgrades';
import { SandboxPortSockets, type SandboxUpstream } from './sandbox-ports';
import { portTarget } from '../../domain/sandbox/port-path';

/** What the gateway needs from the sandboxes of its node. */
export interface SandboxNodeAccess {
  socketPath(sandboxId: string): string;
  /** A socket reaching a port inside the sandbox (its forwarder for that port, pinned on the host). */
  portSocket(sandboxId: string, port: number): Promise<string>;
  isFrozen(sandboxId: string): Promise<boolean>;
  /** Thaws it (a no-op when running) and answers the freeze generation it now runs in, and since when (thawedAt). */
  thaw(sandboxId: string): Promise<FreezeState>;
}

const FREEZE_RECHECK_MS = 100;

/** What serving one proxied request needs: the node, the caches, and the workflows' touches. */
interface SandboxGateway {
  node: SandboxNodeAccess;
  routes: RouteCache;
  matcher: SandboxAddressMatcher;
  agents: SandboxAgents;
  ports: SandboxPortSockets;
  principals: PrincipalCache;
  touches: WorkflowTouches;
  /** Longest a request holds for a sandbox still starting. */
  startWaitSeconds: number;
}

/** The sandbox a request is addressed to, once its caller may reach it and it runs (held while it starts); 404/403/503/504 otherwise. */
async function addressedSandbox(gateway: SandboxGateway, request: FastifyRequest, pathOnly: string) {
  const address = gateway.matcher.match(request.headers.host ?? '', pathOnly);
  if (!address?.values.workspace_id || !address.values.sandbox_id) throw notFound(`no sandbox at ${pathOnly}`);
  // The agent's internal routes serve the host alone, over the socket; from here they do not exist.
  if (reachesInternalRoute(address.rest)) throw notFound(`no such endpoint: ${request.method} ${address.rest}`);
  const workspace = address.values.workspace_id;
  const name = address.values.sandbox_id;

  const principal = await gateway.principals.principal(request.headers);
  const grant = principal.workspaces.get(workspace);
  if (!grant) throw forbidden(`workspace '${workspace}' does not exist or you are not a member of it`);
  const route = await gateway.routes.sandbox(grant.id, name);
  if (!route) throw notFound(`sandbox '${name}' not found in workspace '${workspace}'`);
  const ready = await readySandbox(gateway.routes, { workspaceId: grant.id, name, route }, gateway.startWaitSeconds);
  return { resourceId: ready.resourceId, workflowId: sandboxWorkflowId(workspace, name), rest: address.rest };
}

/**
 * Thaws the sandbox and tells its workflow. The thaw's generation goes with `resumed`: the
 * workflow compares it with the freeze it made, so a resume heard before the freeze's answer
 * still ends that freeze.
 */
async function resume(gateway: SandboxGateway, resourceId: string, workflowId: string): Promise<void> {
  const thawed = await gateway.node.thaw(resourceId);
  gateway.touches.resumed(workflowId, thawed.thawedAt ?? Date.now(), thawed.generation);
}

/** The sandbox's own API, over its socket. */
function apiUpstream(gateway: SandboxGateway, resourceId: string, path: string): SandboxUpstream {
  return {
    socketPath: gateway.node.socketPath(resourceId),
    path,
    poolKey: resourceId,
    unreachable: (err) => {
      // It may have been removed since its route was cached: look again next time.
      gateway.routes.forget(resourceId);
      return { error: 'sandbox_unreachable', message: `the sandbox did not answer: ${err.message}` };
    },
  };
}

/** Streams the request (or relays the upgrade) to the sandbox's API or one of its ports. */
function proxyToSandbox(
  gateway: SandboxGateway,
  request: FastifyRequest,
  reply: FastifyReply,
  sandbox: { resourceId: string; workflowId: string; release?: () => void },
  upstream: SandboxUpstream,
): void {
  const { node, agents } = gateway;
  reply.hijack();
  const upgrade = upgradeOf(request.raw, reply.raw);
  if (sandbox.release) (upgrade?.socket ?? reply.raw).once('close', sandbox.release);
  if (upgrade) {
    // A WebSocket (to a port, or to any route of the API that takes one): relayed, its frames untouched.
    return proxyUpgrade(request.raw, upgrade.socket, upgrade.head, {
      socketPath: upstream.socketPath,
      path: upstream.path,
      headers: upstream.headers,
      onUnreachable: (err) => refuseUpgrade(upgrade.socket, 502, upstream.unreachable(err)),
    });
  }
  // The node may have frozen the sandbox between our check and the request reaching it (its
  // standby check and this gateway do not share a lock): a request still unanswered soon after
  // finds it frozen and thaws it.
  const recheck = setTimeout(() => {
    if (reply.raw.headersSent) return;
    node
      .isFrozen(sandbox.resourceId)
      .then(async (frozen) => {
        if (frozen) await resume(gateway, sandbox.resourceId, sandbox.workflowId);
      })
      .catch(() => undefined);
  }, FREEZE_RECHECK_MS);
  reply.raw.once('close', () => clearTimeout(recheck));
  proxyRequest(request.raw, reply.raw, {
    upstream: { socketPath: upstream.socketPath },
    path: upstream.path,
    headers: upstream.headers,
    agent: agents.for(upstream.poolKey),
    onUnreachable: (err) => {
      reply.raw.writeHead(502, { 'content-type': 'application/json' });
      reply.raw.end(JSON.stringify(upstream.unreachable(err)));
    },
  });
}

/**
 * One request to `{sandbox_url}/...`: checked, the sandbox woken or touched, then proxied to its
 * API, or for `/port/{port}/...` to that port inside it (domain/sandbox/port-path.ts).
 */
async function handleSandboxRequest(gateway: SandboxGateway, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const [pathOnly, query] = splitQuery(request.url);
  const { resourceId, workflowId, rest } = await addressedSandbox(gateway, request, pathOnly);
  const port = portTarget(rest, query);
  if (await gateway.node.isFrozen(resourceId)) {
    await resume(gateway, resourceId, workflowId);
    // Idle connections kept across the freeze are closed by the sandbox as soon as it thaws.
    gateway.agents.reset(resourceId);
  } else if (!port) {
    gateway.touches.touch(workflowId);
  }
  if (!port) return proxyToSandbox(gateway, request, reply, { resourceId, workflowId }, apiUpstream(gateway, resourceId, rest + (query ? `?${query}` : '')));
  // A port's traffic passes the sandbox's API by, which therefore cannot count it: the workflow
  // is told the sandbox is in use for as long as the request (or WebSocket) lasts.
  const upstream = await gateway.ports.upstream(resourceId, port);
  proxyToSandbox(gateway, request, reply, { resourceId, workflowId, release: gateway.touches.hold(workflowId) }, upstream);
}

/**
 * The sandbox gateway: requests to `{sandbox_url}/...` are authenticated against the sandbox's
 * workspace, a request for a sandbox still starting is held until it runs (sandbox-readiness.ts),
 * a sandbox in standby is thawed on the spot (the first call after resume succeeds),
 * and the request streams to the sandbox's own API over its Unix socket. Platform credentials
 * are not forwarded into the sandbox, and the API's internal routes (sandbox-agent/contract/routes.ts)
 * answer 404. The sandbox API's OpenAPI document, generated from the agent's contract, is at
 * /openapi.json.
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
  const gateway: SandboxGateway = {
    node,
    routes,
    matcher: sandboxAddressMatcher(config.sandboxUrlTemplate),
    startWaitSeconds: config.sandboxStartWaitSeconds,
    agents: new SandboxAgents(),
    ports: new SandboxPortSockets((sandboxId, port) => node.portSocket(sandboxId, port)),
    principals: new PrincipalCache((headers) => app.authenticator.authenticate(headers)),
    touches: new WorkflowTouches(
      (workflowId, which, at, generation) =>
        generation === undefined ? app.temporal.workflow.getHandle(workflowId).signal(which, at) : app.temporal.workflow.getHandle(workflowId).signal(which, at, generation),
      (workflowId, which, err) => app.log.warn({ err: err.message, workflowId }, `could not signal ${which}`),
    ),
  };

  // Bodies stream through untouched: no parsing here.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));

  routeUpgrades(app);
  const document = sandboxOpenApiDocument(config);
  app.get('/openapi.json', { config: { public: true, unversioned: true } }, async () => document);
  app.route({
    method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: '/*',
    exposeHeadRoute: false,
    logLevel: proxiedRouteLogLevel(options),
    handler: (request, reply) => handleSandboxRequest(gateway, request, reply),
  });
  app.addHook('onClose', async () => {
    gateway.agents.close();
    gateway.touches.close();
  });
  return app;
}

/**
 * Keep-alive connections per sandbox and per port of it: a sandbox that resumes from standby closes the idle
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

  /** Drops the sandbox's pool and those of its ports (`<id>:<port>`). */
  reset(sandboxId: string): void {
    for (const [key, agent] of this.agents) {
      if (key !== sandboxId && !key.startsWith(`${sandboxId}:`)) continue;
      agent.destroy();
      this.agents.delete(key);
    }
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
