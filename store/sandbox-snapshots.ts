import type { Pool } from 'pg';
import type { SandboxSpec } from '../domain/sandbox/sandbox';
import type { SnapshotStatus } from '../domain/sandbox/snapshot';

/** A snapshot as stored; `deleting` is the store's own: such a row is going and shown to no one. */
export interface SnapshotRow {
  id: string;
  workspace_id: string;
  name: string;
  source_id: string;
  source_name: string;
  source_spec: SandboxSpec;
  node_queue: string;
  status: SnapshotStatus | 'deleting';
  message: string | null;
  size_bytes: string | null;
  created_at: Date;
  created_by: string | null;
  /** Whether the source sandbox is gone (its resource row no longer exists). */
  source_deleted: boolean;
}

export interface SnapshotInsert {
  id: string;
  workspaceId: string;
  name: string;
  sourceId: string;
  sourceName: string;
  sourceSpec: SandboxSpec;
  nodeQueue: string;
  actor: string;
}

/** Where a capture's outcome is announced (NOTIFY), with the snapshot's id. */
export const SNAPSHOT_SETTLED_CHANNEL = 'hangar_snapshot_settled';
/** Where a new snapshot is announced (NOTIFY, with its id) to the nodes, so its own can begin the copy. */
export const SNAPSHOT_REQUESTED_CHANNEL = 'hangar_snapshot_requested';

const SELECT = `SELECT s.id, s.workspace_id, s.name, s.source_id, s.source_name, s.source_spec, s.node_queue, s.status, s.message,
  s.size_bytes, s.created_at, s.created_by, NOT EXISTS (SELECT 1 FROM resources r WHERE r.id = s.source_id) AS source_deleted
  FROM sandbox_snapshots s`;

/** The workspace's snapshots of sandboxes. */
export class SandboxSnapshotStore {
  constructor(private readonly pg: Pool) {}

  /** The new row (pending), announced on SNAPSHOT_REQUESTED_CHANNEL; undefined when the name is taken in the workspace. */
  async insert(snapshot: SnapshotInsert): Promise<SnapshotRow | undefined> {
    const { rows } = await this.pg.query<{ id: string }>(
      `WITH inserted AS (
         INSERT INTO sandbox_snapshots (id, workspace_id, name, source_id, source_name, source_spec, node_queue, status, created_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8) ON CONFLICT (workspace_id, name) DO NOTHING RETURNING id)
       SELECT id, pg_notify($9, id::text) FROM inserted`,
      [snapshot.id, snapshot.workspaceId, snapshot.name, snapshot.sourceId, snapshot.sourceName, snapshot.sourceSpec, snapshot.nodeQueue, snapshot.actor, SNAPSHOT_REQUESTED_CHANNEL],
    );
    return rows[0] ? this.byId(rows[0].id) : undefined;
  }

  async byId(id: string): Promise<SnapshotRow | undefined> {
    const { rows } = await this.pg.query<SnapshotRow>(`${SELECT} WHERE s.id = $1`, [id]);
    return rows[0];
  }

  /** A living snapshot of the workspace by its name or its id, as the reference's routes take either. */
  async find(workspaceId: string, nameOrId: string): Promise<SnapshotRow | undefined> {
    const byName = await this.pg.query<SnapshotRow>(`${SELECT} WHERE s.workspace_id = $1 AND s.name = $2 AND s.status <> 'deleting'`, [workspaceId, nameOrId]);
    if (byName.rows[0] || !UUID.test(nameOrId)) return byName.rows[0];
    const byId = await this.pg.query<SnapshotRow>(`${SELECT} WHERE s.workspace_id = $1 AND s.id = $2 AND s.status <> 'deleting'`, [workspaceId, nameOrId]);
    return byId.rows[0];
  }

  /** The workspace's living snapshots, newest first; those of one source sandbox when named. */
  async list(workspaceId: string, sourceName?: string): Promise<SnapshotRow[]> {
    const { rows } = await this.pg.query<SnapshotRow>(
      `${SELECT} WHERE s.workspace_id = $1 AND s.status <> 'deleting' AND ($2::text IS NULL OR s.source_name = $2) ORDER BY s.created_at DESC, s.name`,
      [workspaceId, sourceName ?? null],
    );
    return rows;
  }

  /**
   * The capture's outcome; a snapshot already being deleted stays so. Announced on
   * SNAPSHOT_SETTLED_CHANNEL with the snapshot's id as it commits: the API waiting to answer a
   * create or a fork hears it there, before the capture's workflow has heard the activity end.
   * Answers when the capture ended (epoch ms, for a ready one), or undefined when the snapshot
   * is going or gone and nothing was recorded.
   */
  async settle(id: string, outcome: { status: 'ready'; sizeBytes: number } | { status: 'failed'; message: string }): Promise<{ readyAt?: number } | undefined> {
    const { rows } = await this.pg.query<{ ready_at: Date | null }>(
      `WITH settled AS (UPDATE sandbox_snapshots SET status = $2, size_bytes = $3, message = $4,
         ready_at = CASE WHEN $2 = 'ready' THEN COALESCE(ready_at, now()) END WHERE id = $1 AND status <> 'deleting' RETURNING id, ready_at)
       SELECT ready_at, pg_notify($5, id::text) FROM settled`,
      [id, outcome.status, outcome.status === 'ready' ? outcome.sizeBytes : null, outcome.status === 'failed' ? outcome.message : null, SNAPSHOT_SETTLED_CHANNEL],
    );
    return rows[0] ? { readyAt: rows[0].ready_at?.getTime() } : undefined;
  }

  /** When the snapshot's capture ended (epoch ms), if it is ready. */
  async readyAt(id: string): Promise<number | undefined> {
    const { rows } = await this.pg.query<{ ready_at: Date | null }>("SELECT ready_at FROM sandbox_snapshots WHERE id = $1 AND status = 'ready'", [id]);
    return rows[0]?.ready_at?.getTime();
  }

  async markDeleting(id: string): Promise<void> {
    await this.pg.query(`UPDATE sandbox_snapshots SET status = 'deleting' WHERE id = $1`, [id]);
  }

  async delete(id: string): Promise<void> {
    await this.pg.query('DELETE FROM sandbox_snapshots WHERE id = $1', [id]);
  }

  /** Those of `ids` that have no row (any status): the snapshots that no longer exist. */
  async missing(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.pg.query<{ id: string }>('SELECT id FROM sandbox_snapshots WHERE id = ANY($1::uuid[])', [ids]);
    const stored = new Set(rows.map((row) => row.id));
    return ids.filter((id) => !stored.has(id));
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
