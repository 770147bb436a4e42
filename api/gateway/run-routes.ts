import type { Pool, PoolClient } from 'pg';
import type { ResourceStatus } from '../../core/resource';
import { workloadRouteKey, type WorkloadKind, type WorkloadScaleState } from '../../core/workloads/types';

/** What the gateway needs to route to a workload: where its serving revision listens. */
export interface WorkloadRoute {
  resourceId: string;
  status: ResourceStatus;
  /** Host socket of the serving revision; undefined while nothing serves. */
  socketPath?: string;
  /** Set for a revision that may scale to zero: whether it runs now or must be woken first. */
  scale?: WorkloadScaleState;
}

/** A route is trusted this long without news; deployments also invalidate it at once (LISTEN). */
const ROUTE_TTL_MS = 2_000;
const MAX_ROUTES = 10_000;

/**
 * Workspace + kind + name -> route, cached briefly so a request costs no query in the steady
 * state. Deployment activities NOTIFY on `channel` with the resource id whenever a workload's
 * serving revision changes; every gateway drops that route at once.
 */
export class WorkloadRouteCache {
  private readonly routes = new Map<string, { route: WorkloadRoute | undefined; at: number }>();
  /** Callers waiting for news of one resource (a wake), by resource id. */
  private readonly waiters = new Map<string, (() => void)[]>();
  private listener?: PoolClient;

  constructor(private readonly pg: Pool, private readonly channel: string) {}

  async listen(): Promise<void> {
    const client = await this.pg.connect();
    client.on('notification', (message) => {
      const id = message.payload ?? '';
      this.forget(id);
      const waiting = this.waiters.get(id);
      this.waiters.delete(id);
      for (const resolve of waiting ?? []) resolve();
    });
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
    const key = workloadRouteKey(workspaceId, kind, name);
    const cached = this.routes.get(key);
    if (cached && Date.now() - cached.at < ROUTE_TTL_MS) return cached.route;
    const { rows } = await this.pg.query<{ id: string; status: ResourceStatus; socket_path: string | null; scale: WorkloadScaleState | null }>(
      `SELECT id, status, state #>> '{serving,socketPath}' AS socket_path, state ->> 'scale' AS scale
         FROM resources WHERE workspace_id = $1 AND kind = $2 AND name = $3`,
      [workspaceId, kind, name],
    );
    const route = rows[0] && { resourceId: rows[0].id, status: rows[0].status, socketPath: rows[0].socket_path ?? undefined, scale: rows[0].scale ?? undefined };
    if (this.routes.size >= MAX_ROUTES) this.routes.clear();
    this.routes.set(key, { route, at: Date.now() });
    return route;
  }

  /**
   * This gateway woke the workload: its cached route says RUNNING at once, before the
   * deployment's own notice arrives, so the requests that follow go straight through.
   */
  markRunning(resourceId: string, socketPath: string): void {
    for (const entry of this.routes.values()) {
      if (entry.route?.resourceId === resourceId) entry.route = { ...entry.route, socketPath, scale: 'RUNNING' };
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

  /** Drops the route of one resource, named by its id or by its route key (after a deletion). */
  forget(resourceIdOrKey: string): void {
    for (const [key, entry] of this.routes) {
      if (key === resourceIdOrKey || entry.route?.resourceId === resourceIdOrKey) this.routes.delete(key);
    }
  }
}
