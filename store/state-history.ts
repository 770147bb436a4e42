import type { Pool, PoolClient } from 'pg';
import type { ResourceType } from '../domain/billing/dimensions';
import { inTransaction } from './transaction';

/** A billed resource, named as its usage events name it. */
export interface HistoryResource {
  workspaceId: string;
  resourceType: ResourceType;
  resourceUuid: string;
  resourceName: string;
}

/** What a resource is from some moment on: its state and the facts that price it in that state. */
export interface ResourceFacts {
  state: string;
  /** Memory it holds for its user in this state (compute), in MB; 0 when nothing runs. */
  memoryMb: number;
  /** Bytes it stores (a volume's size, a workload's code bundle). */
  storedBytes: number;
}

/**
 * The state history of billed resources (table resource_state_intervals): one interval per state
 * a resource was in, written by the code that changes the state, with the time the authority of
 * that state (its lifecycle workflow, or the API for a deletion) gives. `npm run billing:check`
 * compares the bills with it.
 *
 * Every write is idempotent, as the activities that make them are retried: entering the state a
 * resource is already in with the same facts changes nothing, ending what has ended changes
 * nothing.
 */
export class StateHistory {
  constructor(private readonly pg: Pool) {}

  /**
   * From `at` on, the resource is `facts`: its open interval (if any) ends there and a new one
   * opens. Answers since when the resource is as `facts` say: `at`, or the start of the open
   * interval that already said so (a retried write), so the caller's metering starts there too.
   */
  async enter(resource: HistoryResource, facts: ResourceFacts, at: number): Promise<number> {
    return inTransaction(this.pg, async (client) => {
      const open = await openInterval(client, resource.resourceUuid);
      if (open && open.state === facts.state && open.memory_mb === facts.memoryMb && Number(open.stored_bytes) === facts.storedBytes) return open.started_at.getTime();
      // The next interval starts where the last one ended: the history has no gaps nor overlaps.
      const startedAt = (open && (await closeInterval(client, resource.resourceUuid, at))) || new Date(at);
      await client.query(
        `INSERT INTO resource_state_intervals
           (account_id, workspace_id, workspace, resource_type, resource_uuid, resource_name, state, memory_mb, stored_bytes, started_at)
         SELECT w.account_id, w.id, w.name, $2, $3, $4, $5, $6, $7, $8 FROM workspaces w WHERE w.id = $1`,
        [resource.workspaceId, resource.resourceType, resource.resourceUuid, resource.resourceName, facts.state, facts.memoryMb, facts.storedBytes, startedAt],
      );
      return startedAt.getTime();
    });
  }

  /** The resource changes state at `at` and keeps its facts (a sandbox freezing keeps its memory limit). */
  async changeState(resourceUuid: string, state: string, at: number): Promise<void> {
    await inTransaction(this.pg, async (client) => {
      const open = await openInterval(client, resourceUuid);
      if (!open || open.state === state) return;
      await closeInterval(client, resourceUuid, at);
      await client.query(
        `INSERT INTO resource_state_intervals
           (account_id, workspace_id, workspace, resource_type, resource_uuid, resource_name, state, memory_mb, stored_bytes, started_at)
         SELECT account_id, workspace_id, workspace, resource_type, resource_uuid, resource_name, $2, memory_mb, stored_bytes, ended_at
         FROM resource_state_intervals WHERE id = $1`,
        [open.id, state],
      );
    });
  }

  /**
   * The resource stops being billed at `at` (deleted, or failed before it ran). Answers when its
   * history ended: `at`, or when an earlier call ended it (a retried write).
   */
  async end(resourceUuid: string, at: number): Promise<number> {
    const closed = await closeInterval(this.pg, resourceUuid, at);
    if (closed) return closed.getTime();
    const { rows } = await this.pg.query<{ ended_at: Date | null }>('SELECT max(ended_at) AS ended_at FROM resource_state_intervals WHERE resource_uuid = $1', [resourceUuid]);
    return rows[0]?.ended_at?.getTime() ?? at;
  }
}

interface OpenInterval {
  id: string;
  state: string;
  memory_mb: number;
  stored_bytes: string;
  started_at: Date;
}

async function openInterval(client: PoolClient, resourceUuid: string): Promise<OpenInterval | undefined> {
  const { rows } = await client.query<OpenInterval>(
    'SELECT id, state, memory_mb, stored_bytes, started_at FROM resource_state_intervals WHERE resource_uuid = $1 AND ended_at IS NULL FOR UPDATE',
    [resourceUuid],
  );
  return rows[0];
}

/** Ends the open interval, never before its start (a retried write can arrive late); answers when it ended. */
async function closeInterval(client: Pool | PoolClient, resourceUuid: string, at: number): Promise<Date | undefined> {
  const { rows } = await client.query<{ ended_at: Date }>(
    'UPDATE resource_state_intervals SET ended_at = GREATEST(started_at, $2) WHERE resource_uuid = $1 AND ended_at IS NULL RETURNING ended_at',
    [resourceUuid, new Date(at)],
  );
  return rows[0]?.ended_at;
}
