import { newId } from '../domain/ids';
import type { SandboxNetworkSpec } from '../domain/sandbox/network-policy';
import type { Queryable } from './transaction';

export interface WorkspaceRow {
  id: string;
  name: string;
  display_name: string;
  labels: Record<string, string>;
  account_id: string;
  created_at: Date;
  updated_at: Date;
  created_by: string | null;
  updated_by: string | null;
  /** The default `spec.network` of the workspace's new sandboxes; null when it sets none. */
  default_sandbox_network: SandboxNetworkSpec | null;
}

const COLUMNS = 'id, name, display_name, labels, account_id, created_at, updated_at, created_by, updated_by, default_sandbox_network';

export async function getWorkspace(db: Queryable, id: string): Promise<WorkspaceRow | undefined> {
  const { rows } = await db.query<WorkspaceRow>(`SELECT ${COLUMNS} FROM workspaces WHERE id = $1`, [id]);
  return rows[0];
}

/** The workspaces among `ids`, by name. */
export async function listWorkspaces(db: Queryable, ids: string[]): Promise<WorkspaceRow[]> {
  const { rows } = await db.query<WorkspaceRow>(`SELECT ${COLUMNS} FROM workspaces WHERE id = ANY($1) ORDER BY name`, [ids]);
  return rows;
}

/** Whether a workspace of that name exists on the platform (whoever it belongs to). */
export async function workspaceNamed(db: Queryable, name: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM workspaces WHERE name = $1', [name]);
  return Boolean(rowCount);
}

/** Inserts a workspace; a name already taken fails with PostgreSQL's unique violation. */
export async function insertWorkspace(
  db: Queryable,
  input: { accountId: string; name: string; displayName: string; labels: Record<string, string>; actor: string },
): Promise<WorkspaceRow> {
  const { rows } = await db.query<WorkspaceRow>(
    `INSERT INTO workspaces (id, account_id, name, display_name, labels, created_by, updated_by)
     VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING ${COLUMNS}`,
    [newId('ws'), input.accountId, input.name, input.displayName, input.labels, input.actor],
  );
  return rows[0];
}

/** Sets what the change names (display name, labels, default sandbox network: null removes it) and keeps the rest. */
export async function updateWorkspace(
  db: Queryable,
  id: string,
  change: { displayName?: string; labels?: Record<string, string>; defaultSandboxNetwork?: SandboxNetworkSpec | null; actor: string },
): Promise<WorkspaceRow> {
  const network = change.defaultSandboxNetwork;
  const { rows } = await db.query<WorkspaceRow>(
    `UPDATE workspaces SET display_name = COALESCE($2, display_name), labels = COALESCE($3, labels),
            default_sandbox_network = CASE WHEN $5 THEN $6::jsonb ELSE default_sandbox_network END,
            updated_at = now(), updated_by = $4
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, change.displayName ?? null, change.labels ?? null, change.actor, network !== undefined, network ? JSON.stringify(network) : null],
  );
  return rows[0];
}

/** The default `spec.network` of the workspace's new sandboxes, if it sets one. */
export async function workspaceSandboxNetwork(db: Queryable, id: string): Promise<SandboxNetworkSpec | undefined> {
  const { rows } = await db.query<{ default_sandbox_network: SandboxNetworkSpec | null }>('SELECT default_sandbox_network FROM workspaces WHERE id = $1', [id]);
  return rows[0]?.default_sandbox_network ?? undefined;
}

/** Deletes a workspace and, by cascade, everything in it. */
export async function deleteWorkspace(db: Queryable, id: string): Promise<void> {
  await db.query('DELETE FROM workspaces WHERE id = $1', [id]);
}
