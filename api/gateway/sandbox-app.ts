import http, { type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { HangarConfig } from '../../domain/config';
import { ROUTES_CHANNEL } from '../../domain/resource';
import { sandboxAddressMatcher, type SandboxAddressMatcher } from '../../domain/sandbox/url-template';
import { sandboxWorkflowId } from '../../domain/sandbox/sandbox';
import { reachesInternalRoute } from '../../sandbox-agent/contract/routes';
import type { FreezeState } from '../../runtime/sandbox-runtime';
import { ApiError, forbidden, notFound } from '../../domain/errors';
import type { AppOptions } from '../fastify';
import { PrincipalCache } from './principal-cache';
import { proxyRequest } from '../../runtime/http-proxy';
import { refuseUpgrade, tunnelUpgrade } from '../../runtime/upgrade-tunnel';
import type { SandboxTarget } from './sandbox-target';
import { previewUrlTemplate } from '../../domain/sandbox/preview';
import { SandboxPreviewStore } from '../../store/sandbox-previews';
import { PreviewHost } from './preview-host';
import { SandboxPortSockets } from './sandbox-port-sockets';
import { RouteCache } from './route-cache';
import { readySandbox } from './sandbox-readiness';
import { buildGatewayBase, proxiedRouteLogLevel } from './gateway-base';
import { WorkflowTouches } from '../../store/workflow-touches';
import { sandboxOpenApiDocument } from './sandbox-openapi';

/** What the gateway needs from the sandboxes of its node. */
export interface SandboxNodeAccess {
  socketPath(sandboxId: string): string;
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
  principals: PrincipalCache;
  touches: WorkflowTouches;
  /** Longest a request holds for a sandbox still starting. */
  startWaitSeconds: number;
  previews: PreviewHost;
  /** Forwarded ports of the sandboxes (previews reach them). */
  ports: SandboxPortSockets;
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

/** Streams the request to the sandbox over its socket. */
function proxyToSandbox(gateway: SandboxGateway, request: FastifyRequest, reply: FastifyReply, sandbox: SandboxTarget, upstream: { socketPath: string; agent: http.Agent }): void {
  const { node, routes } = gateway;
  reply.hijack();
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
    path: sandbox.path,
    agent: upstream.agent,
    ...sandbox.headers,
    onUnreachable: (err) => {
      // It may have been removed since its route was cached: look again next time.
      routes.forget(sandbox.resourceId);
      sandbox.onUnreachable?.();
      reply.raw.writeHead(502, { 'content-type': 'application/json' });
      reply.raw.end(JSON.stringify({ error: 'sandbox_unreachable', message: `the sandbox did not answer: ${err.message}` }));
    },
  });
}

/** The target's upstream, once its sandbox runs: woken if it stood by, touched otherwise. */
async function readyUpstream(gateway: SandboxGateway, target: SandboxTarget): Promise<{ socketPath: string; agent: http.Agent }> {
  const { resourceId, workflowId } = target;
  if (await gateway.node.isFrozen(resourceId)) {
    await resume(gateway, resourceId, workflowId);
    // Idle connections kept across the freeze are closed by the sandbox as soon as it thaws.
    gateway.agents.reset(resourceId);
    gateway.ports.forget(resourceId);
  } else {
    gateway.touches.touch(workflowId);
  }
  return target.upstream ? target.upstream() : { socketPath: gateway.node.socketPath(resourceId), agent: gateway.agents.for(resourceId) };
}

/** A request for a sandbox that runs or stands by: the sandbox woken or touched, then proxied. */
async function serveSandbox(gateway: SandboxGateway, request: FastifyRequest, reply: FastifyReply, target: SandboxTarget): Promise<void> {
  const upstream = await readyUpstream(gateway, target);
  if (target.holdWhileAnswering) reply.raw.once('close', gateway.touches.hold(target.workflowId));
  proxyToSandbox(gateway, request, reply, target, upstream);
}

/** An upgrade (a WebSocket) for a sandbox: woken or touched, kept in use while the tunnel lasts. */
async function tunnelToSandbox(gateway: SandboxGateway, req: IncomingMessage, socket: Duplex, head: Buffer, target: SandboxTarget): Promise<void> {
  const upstream = await readyUpstream(gateway, target);
  socket.once('close', gateway.touches.hold(target.workflowId));
  const headers = target.headers?.requestHeaders ? target.headers.requestHeaders(req.headers) : req.headers;
  tunnelUpgrade(req, socket, head, {
    socketPath: upstream.socketPath,
    path: target.path,
    // The hop's own headers are what an upgrade is made of: they go up with it.
    headers: { ...headers, host: 'localhost', connection: req.headers.connection, upgrade: req.headers.upgrade },
    onUnreachable: (err) => {
      target.onUnreachable?.();
      refuseUpgrade(socket, 502, { error: 'sandbox_unreachable', message: `the sandbox did not answer: ${err.message}` });
    },
  });
}

/** Upgrades are for previews (preview-host.ts); any other is refused unless another listener of the server takes it. */
function onUpgrade(gateway: SandboxGateway, server: http.Server, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  const [pathOnly, query] = splitQuery(req.url ?? '/');
  const preview = gateway.previews.match(req.headers.host ?? '', pathOnly);
  if (!preview) {
    if (server.listenerCount('upgrade') === 1) refuseUpgrade(socket, 404, { error: 'not_found', message: `no upgrade at ${pathOnly}` });
    return;
  }
  gateway.previews.upgrade(req, socket, head, preview, query).catch((err: unknown) => {
    if (err instanceof ApiError) refuseUpgrade(socket, err.statusCode, { error: err.code, message: err.message, ...err.details });
    else refuseUpgrade(socket, 500, { error: 'internal', message: 'the upgrade failed' });
  });
}

/** One request to `{sandbox_url}/...` (or to a preview): checked, then served. */
async function handleSandboxRequest(gateway: SandboxGateway, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const [pathOnly, query] = splitQuery(request.url);
  const preview = gateway.previews.match(request.headers.host ?? '', pathOnly);
  if (preview) return gateway.previews.serve(request, reply, preview, query);
  const { resourceId, workflowId, rest } = await addressedSandbox(gateway, request, pathOnly);
  await serveSandbox(gateway, request, reply, { resourceId, workflowId, path: rest + (query ? `?${query}` : '') });
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
  const ports = new SandboxPortSockets(config.dataDir, node);
  const gateway: SandboxGateway = {
    node,
    ports,
    routes,
    matcher: sandboxAddressMatcher(config.sandboxUrlTemplate),
    startWaitSeconds: config.sandboxStartWaitSeconds,
    agents: new SandboxAgents(),
    principals: new PrincipalCache((headers) => app.authenticator.authenticate(headers)),
    previews: new PreviewHost({
      store: new SandboxPreviewStore(app.pg),
      routes,
      template: previewUrlTemplate(config),
      startWaitSeconds: config.sandboxStartWaitSeconds,
      ports,
      serve: (request, reply, target) => serveSandbox(gateway, request, reply, target),
      tunnel: (req, socket, head, target) => tunnelToSandbox(gateway, req, socket, head, target),
    }),
    touches: new WorkflowTouches(
      (workflowId, which, at, generation) =>
        generation === undefined ? app.temporal.workflow.getHandle(workflowId).signal(which, at) : app.temporal.workflow.getHandle(workflowId).signal(which, at, generation),
      (workflowId, which, err) => app.log.warn({ err: err.message, workflowId }, `could not signal ${which}`),
    ),
  };

  // Bodies stream through untouched: no parsing here.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));

  const document = sandboxOpenApiDocument(config);
  app.get('/openapi.json', { config: { public: true, unversioned: true } }, async () => document);
  app.route({
    method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: '/*',
    exposeHeadRoute: false,
    logLevel: proxiedRouteLogLevel(options),
    handler: (request, reply) => handleSandboxRequest(gateway, request, reply),
  });
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => onUpgrade(gateway, app.server, req, socket, head));
  app.addHook('onClose', async () => {
    gateway.agents.close();
    gateway.ports.close();
    gateway.touches.close();
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
