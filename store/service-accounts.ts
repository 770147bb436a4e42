import { digest, displayPrefix, newApiKey, newClientId, newClientSecret } from '../domain/credentials';
import { newId } from '../domain/ids';
import type { WorkspaceRole } from '../domain/principal';
import type { Queryable } from './transaction';

export interface NewServiceAccount {
  id: string;
  clientId: string;
  /** Returned once, at creation; only its digest is stored. */
  clientSecret: string;
  createdAt: Date;
}

export async function createServiceAccount(
  db: Queryable,
  input: { accountId: string; name: string; workspaceId: string; role: WorkspaceRole; accountAdmin: boolean; createdBy: string | null },
): Promise<NewServiceAccount> {
  const id = newId('sa');
  const clientId = newClientId();
  const clientSecret = newClientSecret();
  const { rows } = await db.query<{ created_at: Date }>(
    `WITH sa AS (
       INSERT INTO service_accounts (id, account_id, client_id, name, secret_hash, account_admin, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id, created_at
     )
     INSERT INTO workspace_members (workspace_id, principal_id, role) SELECT $8, id, $9 FROM sa
     RETURNING (SELECT created_at FROM sa)`,
    [id, input.accountId, clientId, input.name, digest(clientSecret), input.accountAdmin, input.createdBy, input.workspaceId, input.role],
  );
  return { id, clientId, clientSecret, createdAt: rows[0].created_at };
}

export interface ApiKeyRecord {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

const KEY_COLUMNS = 'id, name, prefix, created_at, expires_at, revoked_at, last_used_at';

function toApiKeyRecord(row: ApiKeyRow): ApiKeyRecord {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at?.toISOString() ?? null,
    revokedAt: row.revoked_at?.toISOString() ?? null,
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
  };
}

/** Creates a key and returns it in clear exactly once; only its digest is stored. */
export async function createApiKey(
  db: Queryable,
  principalId: string,
  name: string,
  expiresAt: Date | null,
): Promise<ApiKeyRecord & { apiKey: string }> {
  const apiKey = newApiKey();
  const { rows } = await db.query<ApiKeyRow>(
    `INSERT INTO api_keys (id, principal_id, name, key_hash, prefix, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
     RETURNING ${KEY_COLUMNS}`,
    [newId('key'), principalId, name, digest(apiKey), displayPrefix(apiKey), expiresAt],
  );
  return { ...toApiKeyRecord(rows[0]), apiKey };
}

export async function listApiKeys(db: Queryable, principalId: string): Promise<ApiKeyRecord[]> {
  const { rows } = await db.query<ApiKeyRow>(
    `SELECT ${KEY_COLUMNS} FROM api_keys WHERE principal_id = $1 ORDER BY created_at, id`,
    [principalId],
  );
  return rows.map(toApiKeyRecord);
}

export async function revokeApiKey(db: Queryable, principalId: string, keyId: string): Promise<ApiKeyRecord | undefined> {
  const { rows } = await db.query<ApiKeyRow>(
    `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 AND principal_id = $2 RETURNING ${KEY_COLUMNS}`,
    [keyId, principalId],
  );
  return rows[0] && toApiKeyRecord(rows[0]);
}

/** A service account with the workspaces it belongs to (by name) and its role in each. */
export interface ServiceAccountRow {
  id: string;
  client_id: string;
  name: string;
  account_admin: boolean;
  created_at: Date;
  memberships: { workspace: string; role: WorkspaceRole }[];
}

const SELECT_SERVICE_ACCOUNTS = `
  SELECT sa.id, sa.client_id, sa.name, sa.account_admin, sa.created_at,
         COALESCE(json_agg(json_build_object('workspace', w.name, 'role', m.role) ORDER BY w.name)
                  FILTER (WHERE w.id IS NOT NULL), '[]'::json) AS memberships
    FROM service_accounts sa
    LEFT JOIN workspace_members m ON m.principal_id = sa.id
    LEFT JOIN workspaces w ON w.id = m.workspace_id`;

/** The service account of an account by its client id. */
export async function findServiceAccount(db: Queryable, accountId: string, clientId: string): Promise<ServiceAccountRow | undefined> {
  const { rows } = await db.query<ServiceAccountRow>(`${SELECT_SERVICE_ACCOUNTS} WHERE sa.client_id = $1 AND sa.account_id = $2 GROUP BY sa.id`, [
    clientId,
    accountId,
  ]);
  return rows[0];
}

/** The service accounts that are members of a workspace, oldest first. */
export async function workspaceServiceAccounts(db: Queryable, workspaceId: string): Promise<ServiceAccountRow[]> {
  const { rows } = await db.query<ServiceAccountRow>(
    `${SELECT_SERVICE_ACCOUNTS}
      WHERE sa.id IN (SELECT principal_id FROM workspace_members WHERE workspace_id = $1)
      GROUP BY sa.id ORDER BY sa.created_at, sa.id`,
    [workspaceId],
  );
  return rows;
}

/** Deletes a service account; its keys and memberships go with it. */
export async function deleteServiceAccount(db: Queryable, id: string): Promise<void> {
  await db.query('DELETE FROM service_accounts WHERE id = $1', [id]);
}

/** What the token endpoint checks a client's credentials against: the digest of its secret, never the secret. */
export async function clientCredentials(db: Queryable, clientId: string): Promise<{ id: string; account_id: string; secret_hash: string } | undefined> {
  const { rows } = await db.query<{ id: string; account_id: string; secret_hash: string }>('SELECT id, account_id, secret_hash FROM service_accounts WHERE client_id = $1', [
    clientId,
  ]);
  return rows[0];
}
