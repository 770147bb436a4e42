import type { Pool } from 'pg';
import { announceRouteChanges } from './route-notices';

// The node each sandbox, volume and workload revision is placed on (migration 023). A choice is
// written with a compare-and-set, so a retried placement answers the choice already made instead
// of placing twice, and a move off a lost node happens once however many parts ask for it.

/** The node a resource (sandbox, volume) is placed on; undefined before placement. */
export async function resourceNode(pg: Pool, resourceId: string): Promise<string | undefined> {
  const { rows } = await pg.query<{ node_id: string | null }>('SELECT node_id FROM resources WHERE id = $1', [resourceId]);
  return rows[0]?.node_id ?? undefined;
}

/** Places a resource on `nodeId` unless it is placed already; answers where it is. */
export async function placeResourceNode(pg: Pool, resourceId: string, nodeId: string): Promise<string> {
  await pg.query('UPDATE resources SET node_id = $2, placed_at = now() WHERE id = $1 AND node_id IS NULL', [resourceId, nodeId]);
  const placed = await resourceNode(pg, resourceId);
  if (!placed) throw new Error(`resource ${resourceId} has no row`);
  return placed;
}

/** Moves a resource from `fromNodeId` to `toNodeId`, unless it already moved elsewhere; answers where it is. */
export async function moveResourceNode(pg: Pool, resourceId: string, fromNodeId: string, toNodeId: string): Promise<string> {
  const moved = await pg.query('UPDATE resources SET node_id = $3, placed_at = now() WHERE id = $1 AND node_id = $2', [resourceId, fromNodeId, toNodeId]);
  // Gateways cached the route to the old node: they drop it at once.
  if (moved.rowCount) await announceRouteChanges(pg, resourceId);
  const placed = await resourceNode(pg, resourceId);
  if (!placed) throw new Error(`resource ${resourceId} has no row`);
  return placed;
}

/** The node a workload revision's instances run on; undefined before placement. */
export async function revisionNode(pg: Pool, resourceId: string, revision: number): Promise<string | undefined> {
  const { rows } = await pg.query<{ node_id: string | null }>('SELECT node_id FROM workload_revisions WHERE resource_id = $1 AND revision = $2', [resourceId, revision]);
  return rows[0]?.node_id ?? undefined;
}

/** Places a revision on `nodeId` unless it is placed already; answers where it is. */
export async function placeRevisionNode(pg: Pool, resourceId: string, revision: number, nodeId: string): Promise<string> {
  await pg.query('UPDATE workload_revisions SET node_id = $3 WHERE resource_id = $1 AND revision = $2 AND node_id IS NULL', [resourceId, revision, nodeId]);
  const placed = await revisionNode(pg, resourceId, revision);
  if (!placed) throw new Error(`revision ${revision} of ${resourceId} has no row`);
  return placed;
}

/**
 * Moves a revision from `fromNodeId` to `toNodeId` (off a lost node), unless it already moved
 * elsewhere; answers where it is. Gateways drop their cached route to the old node at once.
 */
export async function moveRevisionNode(pg: Pool, resourceId: string, revision: number, fromNodeId: string, toNodeId: string): Promise<string> {
  const moved = await pg.query('UPDATE workload_revisions SET node_id = $4 WHERE resource_id = $1 AND revision = $2 AND node_id = $3', [resourceId, revision, fromNodeId, toNodeId]);
  if (moved.rowCount) await announceRouteChanges(pg, resourceId);
  const placed = await revisionNode(pg, resourceId, revision);
  if (!placed) throw new Error(`revision ${revision} of ${resourceId} has no row`);
  return placed;
}
