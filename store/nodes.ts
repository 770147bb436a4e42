import type { Pool } from 'pg';
import type { NodeCapacity, NodeLoad, NodeReport } from '../domain/nodes/node';
import { DEFAULT_SANDBOX_MEMORY_MB } from '../domain/sandbox/sandbox';

/** A node's row, with how long it has been silent by the database's clock. */
export interface NodeRow {
  id: string;
  task_queue: string;
  region: string;
  labels: Record<string, string>;
  memory_bytes: string;
  cpus: number;
  disk_bytes: string;
  disk_free_bytes: string;
  memory_committed_bytes: string;
  sandboxes: number;
  started_at: Date;
  heartbeat_at: Date;
  drained_at: Date | null;
  listener_url: string | null;
  silent_seconds: number;
}

/** A node's row as placement reads it: with the memory limits of sandboxes placed there since its last report (bigint as text). */
export interface PlacementNodeRow extends NodeRow {
  pending_memory_bytes: string;
}

/** A row's capacity and load as numbers (PostgreSQL's bigints arrive as text). */
export function nodeFigures(row: NodeRow): { capacity: NodeCapacity; load: NodeLoad } {
  return {
    capacity: { memoryBytes: Number(row.memory_bytes), cpus: row.cpus, diskBytes: Number(row.disk_bytes) },
    load: { sandboxes: row.sandboxes, memoryCommittedBytes: Number(row.memory_committed_bytes), diskFreeBytes: Number(row.disk_free_bytes) },
  };
}

/** Records what a node reports of itself, registering it the first time (a drain survives its restarts). */
export async function recordHeartbeat(pg: Pool, report: NodeReport): Promise<void> {
  const { capacity, load } = report;
  await pg.query(
    `INSERT INTO nodes (id, task_queue, region, labels, memory_bytes, cpus, disk_bytes, disk_free_bytes, memory_committed_bytes, sandboxes, started_at, listener_url, heartbeat_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, now())
     ON CONFLICT (id) DO UPDATE SET task_queue = EXCLUDED.task_queue, region = EXCLUDED.region, labels = EXCLUDED.labels,
       memory_bytes = EXCLUDED.memory_bytes, cpus = EXCLUDED.cpus, disk_bytes = EXCLUDED.disk_bytes, disk_free_bytes = EXCLUDED.disk_free_bytes,
       memory_committed_bytes = EXCLUDED.memory_committed_bytes, sandboxes = EXCLUDED.sandboxes, started_at = EXCLUDED.started_at,
       listener_url = EXCLUDED.listener_url, heartbeat_at = now()`,
    [report.id, report.taskQueue, report.region, JSON.stringify(report.labels), capacity.memoryBytes, capacity.cpus, capacity.diskBytes, load.diskFreeBytes, load.memoryCommittedBytes, load.sandboxes, report.startedAt, report.listenerUrl ?? null],
  );
}

/**
 * Sandboxes placed on a node since its last heartbeat are not in the load it reported: their
 * memory limits, counted from their rows, so placement sees them at once and a burst of creates
 * between two heartbeats spreads over the nodes. (One placed in the instant between a report's
 * reading and its writing is counted by neither, for one interval.)
 */
const PENDING_MEMORY = `coalesce((SELECT sum(coalesce((r.spec->'runtime'->>'memory')::bigint, ${DEFAULT_SANDBOX_MEMORY_MB})) * 1048576 FROM resources r
  WHERE r.node_id = nodes.id AND r.kind = 'sandboxes' AND r.placed_at > nodes.heartbeat_at), 0)::bigint`;

const COLUMNS = `*, extract(epoch FROM now() - heartbeat_at)::float8 AS silent_seconds`;
const SELECT = `SELECT ${COLUMNS} FROM nodes`;

export async function listNodes(pg: Pool): Promise<NodeRow[]> {
  return (await pg.query<NodeRow>(`${SELECT} ORDER BY id`)).rows;
}

export async function getNode(pg: Pool, id: string): Promise<NodeRow | undefined> {
  return (await pg.query<NodeRow>(`${SELECT} WHERE id = $1`, [id])).rows[0];
}

/** Drains the node (nothing new goes there) or lifts its drain; undefined when no such node is known. */
export async function setNodeDrained(pg: Pool, id: string, drained: boolean): Promise<NodeRow | undefined> {
  const updated = await pg.query(`UPDATE nodes SET drained_at = CASE WHEN $2 THEN coalesce(drained_at, now()) END WHERE id = $1`, [id, drained]);
  return updated.rowCount ? getNode(pg, id) : undefined;
}

/** The nodes of the platform whose control task queue is `controlQueue` (node queues are `<control queue>-node-<id>`), as placement reads them. */
export async function platformNodes(pg: Pool, controlQueue: string): Promise<PlacementNodeRow[]> {
  return (await pg.query<PlacementNodeRow>(`SELECT ${COLUMNS}, ${PENDING_MEMORY} AS pending_memory_bytes FROM nodes WHERE task_queue = $1 || '-node-' || id ORDER BY id`, [controlQueue])).rows;
}
