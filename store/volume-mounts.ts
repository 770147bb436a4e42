import type { Queryable } from './transaction';

/** Names of the sandboxes (not being deleted) of a workspace that mount a volume. */
export async function sandboxesMounting(db: Queryable, workspaceId: string, volume: string): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT name FROM resources
      WHERE workspace_id = $1 AND kind = 'sandboxes' AND status <> 'DELETING'
        AND spec->'volumes' @> jsonb_build_array(jsonb_build_object('name', $2::text))
      ORDER BY name`,
    [workspaceId, volume],
  );
  return rows.map((row) => row.name);
}
