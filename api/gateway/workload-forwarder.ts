import http from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CUSTOM_DOMAIN_TARGETS, domainUpstreamPath } from '../../domain/custom-domain/custom-domain';
import { ApiError, forbidden, notFound } from '../../domain/errors';
import { deploymentWorkflowId, type WorkloadKind } from '../../domain/workloads/workload';
import { proxyRequest } from '../../runtime/http-proxy';
import type { WorkflowTouches } from '../../store/workflow-touches';
import type { PrincipalCache } from './principal-cache';
import type { ProviderProxy } from './provider-proxy';
import type { DomainRoute, GatewayCaller, RouteCache, WorkloadTarget } from './route-cache';
import type { WorkloadWakes } from './workload-wakes';
import type { RemoteNodes } from './remote-nodes';
import { basename } from 'node:path';

const SINGULAR: Record<WorkloadKind, string> = { agents: 'agent', models: 'model', functions: 'function', jobs: 'job' };

/** What forwarding works with: routes, credentials, provider upstreams, and the touches and wakes of workloads that scale to zero. */
export interface ForwardingServices {
  routes: RouteCache;
  principals: PrincipalCache;
  providers: ProviderProxy;
  touches: WorkflowTouches;
  wakes: WorkloadWakes;
  /** Revisions on other nodes, through their listeners. */
  remote: RemoteNodes;
}

/**
 * The run gateway's way from a request to a workload: who calls (the credential, for the
 * workspace in the path or of the domain), which revision serves (cached routes), and the
 * streaming of the request to its socket (keep-alive agents per socket) or provider.
 */
export class WorkloadForwarder {
  private readonly agents = new Map<string, http.Agent>();

  constructor(private readonly services: ForwardingServices) {}

  /** The caller and its grant on the workspace in the path (403 when it is not theirs). */
  async callerOf(request: FastifyRequest): Promise<GatewayCaller> {
    const { workspace } = request.params as { workspace: string };
    const principal = await this.services.principals.principal(request.headers);
    const grant = principal.workspaces.get(workspace);
    if (!grant) throw forbidden(`workspace '${workspace}' does not exist or you are not a member of it`);
    return { principal, grant };
  }

  /** The checks every call of a workload passes, sync or async: 401/403, unknown 404, not serving 503. */
  async targetOf(request: FastifyRequest, kind: WorkloadKind): Promise<WorkloadTarget> {
    return this.resolveTarget(await this.callerOf(request), kind, (request.params as { name: string }).name);
  }

  /** Forwards a request for the workload named in its path to `upstreamPath`. */
  async forward(request: FastifyRequest, reply: FastifyReply, kind: WorkloadKind, upstreamPath: string): Promise<void> {
    return this.proxyTo(request, reply, kind, await this.targetOf(request, kind), upstreamPath);
  }

  /** A request to a custom domain: the same credential check, for the domain's workspace, then its target. */
  async forwardForDomain(request: FastifyRequest, reply: FastifyReply, domain: DomainRoute): Promise<void> {
    const principal = await this.services.principals.principal(request.headers);
    const grant = principal.workspaces.get(domain.workspace);
    if (grant?.id !== domain.workspaceId) throw forbidden('you are not a member of the workspace that owns this domain');
    if (domain.status !== 'DEPLOYED') throw new ApiError(503, 'domain_unavailable', `custom domain '${domain.name}' is ${domain.status}; it routes once DEPLOYED`);
    const query = request.url.indexOf('?');
    const pathOnly = query < 0 ? request.url : request.url.slice(0, query);
    const upstreamPath = domainUpstreamPath(domain.target.kind, pathOnly);
    if (upstreamPath === undefined) throw notFound(`no route for ${request.method} ${pathOnly} on a domain serving ${domain.target.kind} '${domain.target.name}'`);
    const kind = CUSTOM_DOMAIN_TARGETS[domain.target.kind];
    await this.proxyTo(request, reply, kind, await this.resolveTarget({ principal, grant }, kind, domain.target.name), upstreamPath);
  }

  /**
   * Streams the request to the target's provider or revision socket. A workload that scales to
   * zero is woken first if it sleeps, and held busy (touched) while the request lasts.
   */
  async proxyTo(request: FastifyRequest, reply: FastifyReply, kind: WorkloadKind, { name, grant, route }: WorkloadTarget, upstreamPath: string): Promise<void> {
    const { providers, wakes, touches, routes } = this.services;
    if (route.provider) return providers.forward(request, reply, route.provider, name, upstreamPath);
    let socketPath = route.socketPath;
    let release: (() => void) | undefined;
    if (route.scale) {
      const workflowId = deploymentWorkflowId(grant.name, kind, name);
      if (route.scale === 'SCALED_TO_ZERO') socketPath = await wakes.wake(route.resourceId, { workspaceId: grant.id, kind, name }, workflowId, `${SINGULAR[kind]} '${name}'`);
      release = touches.hold(workflowId);
    }
    const query = request.url.indexOf('?');
    const path = upstreamPath + (query < 0 ? '' : request.url.slice(query));
    // An instance on another node: through that node's listener, its socket named by its file name there.
    const remote = this.services.remote.isLocal(route.node) ? undefined : this.services.remote.request(route.node, { kind: 'workload', socketName: basename(socketPath), rest: path });
    reply.hijack();
    if (release) reply.raw.once('close', release);
    proxyRequest(request.raw, reply.raw, {
      upstream: remote ? remote.endpoint : { socketPath },
      path: remote?.path ?? path,
      headers: remote?.credential(request.method),
      agent: remote?.agent ?? this.agentFor(socketPath),
      onUnreachable: (err) => {
        // The revision may have been replaced (or scaled to zero, or moved) since the route was cached: look again next time.
        routes.forget(route.resourceId);
        if (remote) this.services.remote.reset(remote.nodeId);
        this.agents.get(socketPath)?.destroy();
        this.agents.delete(socketPath);
        reply.raw.writeHead(502, { 'content-type': 'application/json' });
        reply.raw.end(JSON.stringify({ error: 'workload_unreachable', message: `${SINGULAR[kind]} '${name}' did not answer: ${err.message}` }));
      },
    });
  }

  /** Drops every keep-alive connection to the revisions' sockets. */
  close(): void {
    for (const agent of this.agents.values()) agent.destroy();
  }

  private async resolveTarget(caller: GatewayCaller, kind: WorkloadKind, name: string): Promise<WorkloadTarget> {
    const route = await this.services.routes.lookup(caller.grant.id, kind, name);
    if (!route) throw notFound(`${SINGULAR[kind]} '${name}' not found in workspace '${caller.grant.name}'`);
    if (route.status !== 'DELETING') {
      const { resourceId, status, provider, socketPath, scale, node } = route;
      if (provider) return { ...caller, name, route: { resourceId, status, provider, node } };
      if (socketPath) return { ...caller, name, route: { resourceId, status, socketPath, scale, node } };
    }
    throw new ApiError(503, 'workload_unavailable', `${SINGULAR[kind]} '${name}' is ${route.status}; it serves once a revision is DEPLOYED`);
  }

  private agentFor(socketPath: string): http.Agent {
    let agent = this.agents.get(socketPath);
    if (!agent) {
      agent = new http.Agent({ keepAlive: true, maxSockets: 256, timeout: 30_000 });
      this.agents.set(socketPath, agent);
    }
    return agent;
  }
}
