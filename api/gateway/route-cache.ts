import type { Pool } from 'pg';
import { customDomainRouteKey, type CustomDomainTargetKind } from '../../domain/custom-domain/custom-domain';
import type { Principal, WorkspaceGrant } from '../../domain/principal';
import type { ResourceStatus } from '../../domain/resource';
import type { SecretBox } from '../../domain/secret-box';
import { PROVIDER_API_KEY_SECRET, PROVIDER_INTEGRATION, type ProviderTarget } from '../../domain/workloads/provider-model';
import { workloadRouteKey, type WorkloadKind, type WorkloadScaleState } from '../../domain/workloads/workload';
import { listenOn, type PgListening } from '../../store/pg-listener';
import type { RouteNode } from './remote-nodes';

/** A provider model's upstream, with the API key of its connection. */
export interface ProviderRoute extends ProviderTarget {
  /** The connection's id, so that a change of its secrets drops the route; undefined when it is gone. */
  connectionId?: string;
  /** Opened in this process and kept only in memory with the route; undefined when the connection is gone. */
  apiKey?: string;
}

/** What the gateway needs to route to a workload: where its serving revision listens. */
export interface WorkloadRoute {
  resourceId: string;
  status: ResourceStatus;
  /** Host socket of the serving revision; undefined while nothing serves. */
  socketPath?: string;
  /** Set instead of socketPath for a provider model: requests go to its upstream. */
  provider?: ProviderRoute;
  /** Set for a revision that may scale to zero: whether it runs now or must be woken first. */
  scale?: WorkloadScaleState;
  /** The node the serving revision runs on (its socket is that node's). */
  node: RouteNode;
}

/** The authenticated caller of a gateway request and its grant on the workspace in the path. */
export interface GatewayCaller {
  principal: Principal;
  grant: WorkspaceGrant;
}

type RouteBase = Omit<WorkloadRoute, 'socketPath' | 'provider'>;

/** A route that serves: from a revision's socket or from a provider's upstream, never both. */
export type ServingRoute = (RouteBase & { socketPath: string; provider?: undefined }) | (RouteBase & { provider: ProviderRoute; socketPath?: undefined });

/** A workload that serves, resolved for one caller. */
export interface WorkloadTarget extends GatewayCaller {
  name: string;
  route: ServingRoute;
}

/** What the gateway needs to route a custom domain's requests: whose it is and what it serves. */
export interface DomainRoute {
  resourceId: string;
  name: string;
  status: ResourceStatus;
  workspaceId: string;
  workspace: string;
  target: { kind: CustomDomainTargetKind; name: string };
}

/** A sandbox, as the sandbox gateway routes to it (its socket follows from the id). */
export interface SandboxRoute {
  resourceId: string;
  status: ResourceStatus;
  /** The node it runs on; a move to another node announces the resource, which drops the route. */
  node: RouteNode;
  /** The message of its latest event: why it FAILED, for one that did. */
  reason?: string;
}

/** A route is trusted this long without news; deployments also invalidate it at once (LISTEN). */
const ROUTE_TTL_MS = 2_000;
const MAX_ROUTES = 10_000;

interface RouteRow {
  id: string;
  status: ResourceStatus;
  socket_path: string | null;
  provider: ProviderTarget | null;
  connection_id: string | null;
  sealed_secret: string | null;
  scale: WorkloadScaleState | null;
  node_id: string | null;
  listener_url: string | null;
}

/**
 * What both gateways route by, cached briefly so a request costs no query in the steady state:
 * workspace + kind + name -> workload route, host -> custom domain (unknown hosts too: most
 * requests name none), workspace + name -> sandbox. Every change of a resource's status or state
 * and every deletion is announced on `channel` with its id (ResourceStore), new names and hosts
 * with their route key, and connection changes with the connection's id; every gateway drops the
 * routes concerned at once.
 */
export class RouteCache {
  private readonly routes = new Map<string, { route: WorkloadRoute | DomainRoute | SandboxRoute | undefined; at: number }>();
  /** Callers waiting for news of one resource (a wake), by resource id. */
  private readonly waiters = new Map<string, (() => void)[]>();
  private listening?: PgListening;
  private closed = false;
  private readonly noticeListeners: ((idOrKey: string) => void)[] = [];

  constructor(
    private readonly pg: Pool,
    private readonly channel: string,
    /** Opens the API keys of provider models' connections. */
    private readonly secrets: SecretBox,
  ) {}

  /**
   * Listens for the notices. A lost listening connection (a database restart) means notices are
   * missed until a new one listens: every route is forgotten then, and at each new attempt; the
   * TTL alone keeps routes fresh meanwhile.
   */
  async listen(): Promise<void> {
    const listening = await listenOn(this.pg, this.channel, { notice: (id) => this.notified(id), lost: () => this.routes.clear() });
    if (this.closed) return listening.close();
    this.listening = listening;
  }

  /** Others that cache by resource id (the preview host) hear every notice too. */
  onNotice(listener: (idOrKey: string) => void): void {
    this.noticeListeners.push(listener);
  }

  private notified(id: string): void {
    this.forget(id);
    for (const listener of this.noticeListeners) listener(id);
    const waiting = this.waiters.get(id);
    this.waiters.delete(id);
    for (const resolve of waiting ?? []) resolve();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listening?.close();
    this.listening = undefined;
  }

  async lookup(workspaceId: string, kind: WorkloadKind, name: string): Promise<WorkloadRoute | undefined> {
    return this.cached(workloadRouteKey(workspaceId, kind, name), async () => {
      // A provider model's connection comes along: one query either way.
      const { rows } = await this.pg.query<RouteRow>(
        `SELECT r.id, r.status, r.state #>> '{serving,socketPath}' AS socket_path, r.state #> '{serving,provider}' AS provider,
                r.state ->> 'scale' AS scale, c.id AS connection_id, c.sealed_secret, wr.node_id, n.listener_url
           FROM resources r
           LEFT JOIN integration_connections c
             ON c.workspace_id = r.workspace_id AND c.name = r.state #>> '{serving,provider,connection}' AND c.integration = $4
           LEFT JOIN workload_revisions wr ON wr.resource_id = r.id AND wr.revision = (r.state #>> '{serving,revision}')::int
           LEFT JOIN nodes n ON n.id = wr.node_id
          WHERE r.workspace_id = $1 AND r.kind = $2 AND r.name = $3`,
        [workspaceId, kind, name, PROVIDER_INTEGRATION],
      );
      const row = rows[0];
      return (
        row && {
          resourceId: row.id,
          status: row.status,
          socketPath: row.socket_path ?? undefined,
          provider: row.provider ? this.providerRoute(row.provider, row) : undefined,
          scale: row.scale ?? undefined,
          node: routeNode(row),
        }
      );
    });
  }

  /** The custom domain claiming `host` (lowercase, no port), if any. */
  async domain(host: string): Promise<DomainRoute | undefined> {
    return this.cached(customDomainRouteKey(host), async () => {
      // Served by the unique index on spec->>'domain' of custom domains.
      const { rows } = await this.pg.query<{ id: string; name: string; status: ResourceStatus; workspace_id: string; workspace: string; target: DomainRoute['target'] }>(
        `SELECT r.id, r.name, r.status, r.workspace_id, w.name AS workspace, r.spec->'target' AS target
           FROM resources r JOIN workspaces w ON w.id = r.workspace_id
          WHERE r.kind = 'customdomains' AND r.spec->>'domain' = $1`,
        [host],
      );
      const row = rows[0];
      return row && { resourceId: row.id, name: row.name, status: row.status, workspaceId: row.workspace_id, workspace: row.workspace, target: row.target };
    });
  }

  /**
   * A sandbox the sandbox gateway may serve. Only a DEPLOYED one is kept: the transitions out of
   * it are announced (ResourceStore.transition), while one being created or gone is read again
   * each time, so a sandbox is reachable the moment it runs. A kept route is used only once the
   * notices committed before the request have been heard: a notice travels apart from the answer
   * that told the caller of the change, and a caller told DELETING could otherwise still reach
   * the sandbox through a route not yet dropped (a round trip on the listening connection).
   */
  async sandbox(workspaceId: string, name: string): Promise<SandboxRoute | undefined> {
    return this.cached(
      `sandboxes:${workspaceId}:${name}`,
      async () => {
        const { rows } = await this.pg.query<{ id: string; status: ResourceStatus; reason: string | null; node_id: string | null; listener_url: string | null }>({
          name: 'sandbox-route-node',
          text: `SELECT r.id, r.status, r.events -> -1 ->> 'message' AS reason, r.node_id, n.listener_url
                   FROM resources r LEFT JOIN nodes n ON n.id = r.node_id
                  WHERE r.workspace_id = $1 AND r.kind = 'sandboxes' AND r.name = $2`,
          values: [workspaceId, name],
        });
        const row = rows[0];
        return row && { resourceId: row.id, status: row.status, reason: row.reason ?? undefined, node: routeNode(row) };
      },
      (route) => route?.status === 'DEPLOYED',
      { caughtUp: true },
    );
  }

  private async cached<T extends WorkloadRoute | DomainRoute | SandboxRoute>(
    key: string,
    load: () => Promise<T | undefined>,
    keep: (route: T | undefined) => boolean = () => true,
    options: { caughtUp?: boolean } = {},
  ): Promise<T | undefined> {
    let cached = this.routes.get(key);
    if (cached && options.caughtUp && this.listening) {
      await this.listening.caughtUp();
      cached = this.routes.get(key);
    }
    if (cached && Date.now() - cached.at < ROUTE_TTL_MS) return cached.route as T | undefined;
    const route = await load();
    if (this.routes.size >= MAX_ROUTES) this.routes.clear();
    if (keep(route)) this.routes.set(key, { route, at: Date.now() });
    else this.routes.delete(key);
    return route;
  }

  /**
   * This gateway woke the workload: its cached route says RUNNING at once, before the
   * deployment's own notice arrives, so the requests that follow go straight through.
   */
  markRunning(resourceId: string, socketPath: string): void {
    for (const entry of this.routes.values()) {
      const route = entry.route;
      if (route && !('target' in route) && route.resourceId === resourceId) entry.route = { ...route, socketPath, scale: 'RUNNING' };
    }
  }

  /**
   * Resolves at the next notice about the resource (its route changed), or when `signal` aborts;
   * a wake watches for the node's own notice that the workload runs again.
   */
  nextChange(resourceId: string, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const waiting = this.waiters.get(resourceId) ?? [];
      waiting.push(resolve);
      this.waiters.set(resourceId, waiting);
      signal.addEventListener('abort', () => {
        const left = (this.waiters.get(resourceId) ?? []).filter((w) => w !== resolve);
        if (left.length > 0) this.waiters.set(resourceId, left);
        else this.waiters.delete(resourceId);
        resolve();
      }, { once: true });
    });
  }

  /** Drops the routes of one resource or connection, named by its id, or by its route key (after a deletion, or a host newly claimed). */
  forget(idOrKey: string): void {
    for (const [key, entry] of this.routes) {
      const route = entry.route;
      if (key === idOrKey || route?.resourceId === idOrKey || (route && 'provider' in route && route.provider?.connectionId === idOrKey)) this.routes.delete(key);
    }
  }

  private providerRoute(target: ProviderTarget, row: RouteRow): ProviderRoute {
    if (!row.connection_id || !row.sealed_secret) return { ...target };
    let apiKey: string | undefined;
    try {
      apiKey = (JSON.parse(this.secrets.open(row.sealed_secret, row.connection_id)) as Record<string, string>)[PROVIDER_API_KEY_SECRET];
    } catch {
      // Sealed with another master key: served as a connection without a key, which says so.
    }
    return { ...target, connectionId: row.connection_id, apiKey };
  }
}

function routeNode(row: { node_id: string | null; listener_url: string | null }): RouteNode {
  return { nodeId: row.node_id ?? undefined, listenerUrl: row.listener_url ?? undefined };
}
