import type { Pool, PoolClient } from 'pg';
import { customDomainRouteKey, type CustomDomainTargetKind } from '../../core/custom-domain/types';
import type { ResourceStatus } from '../../core/resource';
import { workloadRouteKey, type WorkloadKind } from '../../core/workloads/types';

/** What the gateway needs to route to a workload: where its serving revision listens. */
export interface WorkloadRoute {
  resourceId: string;
  status: ResourceStatus;
  /** Host socket of the serving revision; undefined while nothing serves. */
  socketPath?: string;
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

/** A route is trusted this long without news; deployments also invalidate it at once (LISTEN). */
const ROUTE_TTL_MS = 2_000;
const MAX_ROUTES = 10_000;

/**
 * Workspace + kind + name -> workload route, and host -> custom domain, cached briefly so a
 * request costs no query in the steady state (unknown hosts too: most requests name none).
 * Deployment activities and the custom domain routes NOTIFY on `channel` with the resource id, or
 * a route key, whenever a route changes; every gateway drops that route at once.
 */
export class WorkloadRouteCache {
  private readonly routes = new Map<string, { route: WorkloadRoute | DomainRoute | undefined; at: number }>();
  private listener?: PoolClient;

  constructor(private readonly pg: Pool, private readonly channel: string) {}

  async listen(): Promise<void> {
    const client = await this.pg.connect();
    client.on('notification', (message) => this.forget(message.payload ?? ''));
    // A lost listener means missed invalidations: fall back to the TTL alone, and say nothing more.
    client.on('error', () => this.routes.clear());
    await client.query(`LISTEN ${this.channel}`);
    this.listener = client;
  }

  async close(): Promise<void> {
    this.listener?.release(true);
    this.listener = undefined;
  }

  async lookup(workspaceId: string, kind: WorkloadKind, name: string): Promise<WorkloadRoute | undefined> {
    return this.cached(workloadRouteKey(workspaceId, kind, name), async () => {
      const { rows } = await this.pg.query<{ id: string; status: ResourceStatus; socket_path: string | null }>(
        `SELECT id, status, state #>> '{serving,socketPath}' AS socket_path FROM resources WHERE workspace_id = $1 AND kind = $2 AND name = $3`,
        [workspaceId, kind, name],
      );
      return rows[0] && { resourceId: rows[0].id, status: rows[0].status, socketPath: rows[0].socket_path ?? undefined };
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

  private async cached<T extends WorkloadRoute | DomainRoute>(key: string, load: () => Promise<T | undefined>): Promise<T | undefined> {
    const cached = this.routes.get(key);
    if (cached && Date.now() - cached.at < ROUTE_TTL_MS) return cached.route as T | undefined;
    const route = await load();
    if (this.routes.size >= MAX_ROUTES) this.routes.clear();
    this.routes.set(key, { route, at: Date.now() });
    return route;
  }

  /** Drops the route of one resource, named by its id or by its route key (after a deletion, or a host newly claimed). */
  forget(resourceIdOrKey: string): void {
    for (const [key, entry] of this.routes) {
      if (key === resourceIdOrKey || entry.route?.resourceId === resourceIdOrKey) this.routes.delete(key);
    }
  }
}
