import type { Pool } from 'pg';

// Sandboxes left on a node that was LOST (migration 024): the platform wrote them off (their
// resource FAILED, its billing ended at the node's last heartbeat), so the node, back, removes
// them before it takes work and never runs them again.

/** Writes off `sandboxIds` on `nodeId` (again: nothing changes). */
export async function abandonSandboxes(pg: Pool, nodeId: string, sandboxIds: readonly string[]): Promise<void> {
  if (sandboxIds.length === 0) return;
  await pg.query('INSERT INTO abandoned_sandboxes (node_id, sandbox_id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING', [nodeId, sandboxIds]);
}

/** The sandboxes `nodeId` must remove. */
export async function abandonedSandboxes(pg: Pool, nodeId: string): Promise<string[]> {
  const { rows } = await pg.query<{ sandbox_id: string }>('SELECT sandbox_id FROM abandoned_sandboxes WHERE node_id = $1 ORDER BY sandbox_id', [nodeId]);
  return rows.map((row) => row.sandbox_id);
}

/** `nodeId` removed `sandboxId`: forget it. */
export async function forgetAbandonedSandbox(pg: Pool, nodeId: string, sandboxId: string): Promise<void> {
  await pg.query('DELETE FROM abandoned_sandboxes WHERE node_id = $1 AND sandbox_id = $2', [nodeId, sandboxId]);
}
