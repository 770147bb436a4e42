import type { Pool } from 'pg';
import { digest } from '../domain/credentials';
import type { Principal, WorkspaceGrant } from '../domain/principal';

interface PrincipalRow {
  id: string;
  client_id: string;
  name: string;
  account_id: string;
  account_admin: boolean;
  workspaces: WorkspaceGrant[];
}

// Account admins hold every workspace of their account as admin; others hold their memberships.
const PRINCIPAL_COLUMNS = `
  sa.id, sa.client_id, sa.name, sa.account_id, sa.account_admin,
  COALESCE((
    SELECT json_agg(json_build_object('id', w.id, 'name', w.name,
                                      'role', CASE WHEN sa.account_admin THEN 'admin' ELSE m.role END))
    FROM workspaces w
    LEFT JOIN workspace_members m ON m.workspace_id = w.id AND m.principal_id = sa.id
    WHERE w.account_id = sa.account_id AND (sa.account_admin OR m.principal_id IS NOT NULL)
  ), '[]'::json) AS workspaces`;

function toPrincipal(row: PrincipalRow, credential: Principal['credential']): Principal {
  return {
    id: row.id,
    clientId: row.client_id,
    name: row.name,
    accountId: row.account_id,
    accountAdmin: row.account_admin,
    workspaces: new Map(row.workspaces.map((w) => [w.name, w])),
    credential,
  };
}

/** Recording every use would put a write on every request; once a minute per key is enough. */
const LAST_USED_GRANULARITY = "interval '1 minute'";

/** The principal owning a live (not revoked, not expired) API key. */
export async function principalForApiKey(pg: Pool, apiKey: string): Promise<Principal | undefined> {
  // Named: these run on every request, so PostgreSQL parses and plans them once per connection.
  const { rows } = await pg.query<PrincipalRow & { key_id: string; stale: boolean }>({
    name: 'principal-by-api-key',
    text: `SELECT k.id AS key_id,
            (k.last_used_at IS NULL OR k.last_used_at < now() - ${LAST_USED_GRANULARITY}) AS stale,
            ${PRINCIPAL_COLUMNS}
       FROM api_keys k JOIN service_accounts sa ON sa.id = k.principal_id
      WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())`,
    values: [digest(apiKey)],
  });
  const row = rows[0];
  if (!row) return undefined;
  if (row.stale) {
    pg.query('UPDATE api_keys SET last_used_at = now() WHERE id = $1', [row.key_id]).catch(() => undefined);
  }
  return toPrincipal(row, 'api_key');
}

/** The principal a verified token names; undefined once the service account is gone. */
export async function principalForToken(pg: Pool, serviceAccountId: string, accountId: string): Promise<Principal | undefined> {
  const { rows } = await pg.query<PrincipalRow>({
    name: 'principal-by-id',
    text: `SELECT ${PRINCIPAL_COLUMNS} FROM service_accounts sa WHERE sa.id = $1 AND sa.account_id = $2`,
    values: [serviceAccountId, accountId],
  });
  return rows[0] && toPrincipal(rows[0], 'jwt');
}

/** The service account behind a live API key, and the seconds the key has left (null: no expiry); undefined for a dead or unknown key. */
export async function apiKeyGrant(pg: Pool, apiKey: string): Promise<{ serviceAccountId: string; clientId: string; accountId: string; secondsLeft: number | null } | undefined> {
  const { rows } = await pg.query<{ id: string; client_id: string; account_id: string; seconds_left: number | null }>(
    `SELECT sa.id, sa.client_id, sa.account_id, floor(extract(epoch FROM k.expires_at - now()))::int AS seconds_left
       FROM api_keys k JOIN service_accounts sa ON sa.id = k.principal_id
      WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())`,
    [digest(apiKey)],
  );
  const row = rows[0];
  return row && { serviceAccountId: row.id, clientId: row.client_id, accountId: row.account_id, secondsLeft: row.seconds_left };
}
