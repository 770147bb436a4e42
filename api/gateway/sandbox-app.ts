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
import { CLOSE_GRACE_MS, type AppOptions } from '../fastify';
import { PrincipalCache } from './principal-cache';
import { forwardableHeaders, proxyRequest, proxyUpgrade } from '../../runtime/http-proxy';
import { RouteCache } from './route-cache';
import { readySandbox } from './sandbox-readiness';
import { buildGatewayBase, proxiedRouteLogLevel } from './gateway-base';
import { WorkflowTouches, touchIntervalMs } from '../../store/workflow-touches';
import { sandboxOpenApiDocument } from './sandbox-openapi';
import { routeUpgrades, upgradeOf } from './upgrades';
import { SandboxPortSockets, type SandboxUpstream } from './sandbox-ports';
import { portTarget } from '../../domain/sandbox/port-path';
import { previewUrlTemplate } from '../../domain/sandbox/preview';
import { SandboxPreviewStore } from '../../store/sandbox-previews';
import { PreviewHost } from './preview-host';
import type { SandboxAt, SandboxTarget } from './sandbox-target';
import { RemoteNodes } from './remote-nodes';
import { nodeCredentialKey } from '../../domain/nodes/node-credential';
import { NODE_THAWED_HEADER, type ListenerTarget } from '../../domain/nodes/listener-paths';
import type { PortTarget } from '../../domain/sandbox/port-path';
import { loadMasterKey } from '../../store/master-key';

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
  /** Sandboxes on other nodes, through their listeners. */
  remote: RemoteNodes;
  routes: RouteCache;
  matcher: SandboxAddressMatcher;
  agents: SandboxAgents;
  ports: SandboxPortSockets;
  previews: PreviewHost;
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
  return { resourceId: ready.resourceId, node: ready.node, workflowId: sandboxWorkflowId(workspace, name), rest: address.rest };
}

/** Its freezing, on its node: this host's runtime, or the node's listener. */
function isFrozen(gateway: SandboxGateway, sandbox: SandboxAt): Promise<boolean> {
  return gateway.remote.isLocal(sandbox.node) ? gateway.node.isFrozen(sandbox.resourceId) : gateway.remote.isFrozen(sandbox.node, sandbox.resourceId);
}

/**
 * Thaws the sandbox and tells its workflow. The thaw's generation goes with `resumed`: the
 * workflow compares it with the freeze it made, so a resume heard before the freeze's answer
 * still ends that freeze.
 */
async function resume(gateway: SandboxGateway, sandbox: SandboxAt, workflowId: string): Promise<void> {
  const { remote, node } = gateway;
  const thawed = remote.isLocal(sandbox.node) ? await node.thaw(sandbox.resourceId) : await remote.thaw(sandbox.node, sandbox.resourceId);
  gateway.touches.resumed(workflowId, thawed.thawedAt ?? Date.now(), thawed.generation);
}

/** A sandbox on another node: its listener, for `target`; a listener that does not answer drops the route and the node's connections. */
function remoteUpstream(gateway: SandboxGateway, sandbox: SandboxAt, target: ListenerTarget & { rest: string }, extra: Partial<SandboxUpstream> = {}): SandboxUpstream {
  const remote = gateway.remote.request(sandbox.node, target);
  return {
    ...extra,
    via: { remote },
    path: target.rest,
    poolKey: sandbox.resourceId,
    unreachable: (err) => {
      gateway.routes.forget(sandbox.resourceId);
      gateway.remote.reset(remote.nodeId);
      return { error: 'node_unreachable', message: `node '${remote.nodeId}' of the sandbox did not answer: ${err.message}` };
    },
  };
}

/** The upstream, with the thaw its node's listener reports (NODE_THAWED_HEADER) told to the sandbox's workflow, and the header dropped. */
function reportingThaws(gateway: SandboxGateway, workflowId: string, upstream: SandboxUpstream): SandboxUpstream {
  const own = upstream.responseHeaders;
  return {
    ...upstream,
    responseHeaders: (headers) => {
      const { [NODE_THAWED_HEADER]: thawed, ...rest } = headers;
      if (typeof thawed === 'string') {
        const [generation, at] = thawed.split(',').map(Number);
        if (Number.isFinite(generation) && Number.isFinite(at)) gateway.touches.resumed(workflowId, at, generation);
      }
      return own ? own(rest) : forwardableHeaders(rest);
    },
  };
}

/** A port inside the sandbox: its forwarder's socket here, or through its node's listener. */
function portUpstream(gateway: SandboxGateway, sandbox: SandboxAt, port: PortTarget): Promise<SandboxUpstream> | SandboxUpstream {
  if (gateway.remote.isLocal(sandbox.node)) return gateway.ports.upstream(sandbox.resourceId, port);
  return remoteUpstream(gateway, sandbox, { kind: 'sandbox-port', sandboxId: sandbox.resourceId, port: port.port, rest: port.path }, { bypassesApi: true });
}

/** The sandbox's own API, over its socket (or its node's listener). */
function apiUpstream(gateway: SandboxGateway, sandbox: SandboxAt, path: string): SandboxUpstream {
  const { resourceId } = sandbox;
  if (!gateway.remote.isLocal(sandbox.node)) return remoteUpstream(gateway, sandbox, { kind: 'sandbox-api', sandboxId: resourceId, rest: path });
  return {
    via: { socketPath: gateway.node.socketPath(resourceId) },
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
  sandbox: SandboxAt & { workflowId: string },
  upstream: SandboxUpstream,
): void {
  const { agents } = gateway;
  const remote = 'remote' in upstream.via ? upstream.via.remote : undefined;
  const path = remote?.path ?? upstream.path;
  const headers = remote ? { ...upstream.headers, ...remote.credential(request.method) } : upstream.headers;
  reply.hijack();
  const upgrade = upgradeOf(request.raw, reply.raw);
  // Traffic the sandbox's API does not count as use (a port's, an upgraded connection's): the
  // workflow is told the sandbox is in use for as long as it lasts.
  if (upstream.bypassesApi || upgrade) (upgrade?.socket ?? reply.raw).once('close', gateway.touches.hold(sandbox.workflowId));
  if (upgrade) {
    // A WebSocket (to a port, or to any route of the API that takes one): relayed, its frames untouched.
    return proxyUpgrade(request.raw, upgrade.socket, upgrade.head, {
      target: remote ? remote.endpoint : { path: (upstream.via as { socketPath: string }).socketPath },
      path,
      headers,
      requestHeaders: upstream.requestHeaders,
      onUnreachable: (err) => refuseUpgrade(upgrade.socket, 502, upstream.unreachable(err)),
    });
  }
  // The node may have frozen the sandbox between our check and the request reaching it (its
  // standby check and this gateway do not share a lock): a request still unanswered soon after
  // finds it frozen and thaws it.
  const recheck = setTimeout(() => {
    if (reply.raw.headersSent) return;
    isFrozen(gateway, sandbox)
      .then(async (frozen) => {
        if (frozen) await resume(gateway, sandbox, sandbox.workflowId);
      })
      .catch(() => undefined);
  }, FREEZE_RECHECK_MS);
  reply.raw.once('close', () => clearTimeout(recheck));
  proxyRequest(request.raw, reply.raw, {
    upstream: remote ? remote.endpoint : (upstream.via as { socketPath: string }),
    path,
    headers,
    requestHeaders: upstream.requestHeaders,
    responseHeaders: upstream.responseHeaders,
    agent: remote?.agent ?? agents.for(upstream.poolKey),
    onUnreachable: (err) => {
      reply.raw.writeHead(502, { 'content-type': 'application/json' });
      reply.raw.end(JSON.stringify(upstream.unreachable(err)));
    },
  });
}

/**
 * A request for a sandbox that runs or stands by: woken (or touched), then proxied to the
 * target's upstream, chosen once the sandbox runs (a port's forwarder is opened by its API).
 */
async function serveSandbox(gateway: SandboxGateway, request: FastifyRequest, reply: FastifyReply, target: SandboxTarget): Promise<void> {
  const { resourceId, workflowId } = target;
  if (!gateway.remote.isLocal(target.node) && request.headers.upgrade === undefined) {
    // The node's listener thaws a sandbox in standby itself and says so in its answer: no round
    // trip to ask first. (An upgrade's answer is relayed unread, so an upgrade asks first.)
    gateway.touches.touch(workflowId);
    return proxyToSandbox(gateway, request, reply, target, reportingThaws(gateway, workflowId, await target.upstream()));
  }
  if (await isFrozen(gateway, target)) {
    await resume(gateway, target, workflowId);
    // Idle connections kept across the freeze are closed by the sandbox as soon as it thaws.
    gateway.agents.reset(resourceId);
  } else {
    gateway.touches.touch(workflowId);
  }
  proxyToSandbox(gateway, request, reply, target, await target.upstream());
}

/**
 * One request to `{sandbox_url}/...`, or to a preview URL (preview-host.ts): checked, then served
 * by the sandbox's API, or for `/port/{port}/...` by that port inside it (domain/sandbox/port-path.ts).
 */
async function handleSandboxRequest(gateway: SandboxGateway, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const [pathOnly, query] = splitQuery(request.url);
  const preview = gateway.previews.match(request.headers.host ?? '', pathOnly);
  if (preview) return gateway.previews.serve(request, reply, preview, query);
  const { resourceId, node, workflowId, rest } = await addressedSandbox(gateway, request, pathOnly);
  const port = portTarget(rest, query);
  const sandbox = { resourceId, node };
  await serveSandbox(gateway, request, reply, {
    ...sandbox,
    workflowId,
    upstream: async () => (port ? portUpstream(gateway, sandbox, port) : apiUpstream(gateway, sandbox, rest + (query ? `?${query}` : ''))),
  });
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
    remote: new RemoteNodes(config.nodeId, nodeCredentialKey(loadMasterKey(config))),
    routes,
    matcher: sandboxAddressMatcher(config.sandboxUrlTemplate),
    startWaitSeconds: config.sandboxStartWaitSeconds,
    agents: new SandboxAgents(),
    ports: new SandboxPortSockets((sandboxId, port) => node.portSocket(sandboxId, port)),
    principals: new PrincipalCache((headers) => app.authenticator.authenticate(headers)),
    previews: new PreviewHost({
      store: new SandboxPreviewStore(app.pg),
      routes,
      template: previewUrlTemplate(config),
      startWaitSeconds: config.sandboxStartWaitSeconds,
      portUpstream: async (sandbox, target) => portUpstream(gateway, sandbox, target),
      apiUpstream: (sandbox, path) => apiUpstream(gateway, sandbox, path),
      serve: (request, reply, target) => serveSandbox(gateway, request, reply, target),
    }),
    touches: new WorkflowTouches(
      (workflowId, which, at, generation) =>
        generation === undefined ? app.temporal.workflow.getHandle(workflowId).signal(which, at) : app.temporal.workflow.getHandle(workflowId).signal(which, at, generation),
      (workflowId, which, err) => app.log.warn({ err: err.message, workflowId }, `could not signal ${which}`),
      // Several touches per idle period: a port's traffic or a WebSocket is seen through them alone.
      touchIntervalMs(config.sandboxIdleSeconds),
    ),
  };

  // Bodies stream through untouched: no parsing here.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));

  routeUpgrades(app, CLOSE_GRACE_MS);
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
    gateway.remote.close();
    gateway.touches.close();
  });
  return app;
}

/**
 * Keep-alive connections per sandbox and per port of it: a sandbox that resumes from standby
 * closes the idle connections it held, so they are dropped with the sandbox's own pools instead
 * of failing a request.
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
