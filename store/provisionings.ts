import type { Pool } from 'pg';
import type { ProvisioningResult, ProvisioningStatus } from '../domain/integrations/provisioning';

export interface ProvisioningRow {
  id: string;
  workspace: string;
  integration: string;
  tenant: string;
  code_hash: string;
  status: ProvisioningStatus;
  result: ProvisioningResult | null;
  error: string | null;
  created_at: Date;
  updated_at: Date;
}

/** What identifies one provisioning run and what it was asked to do. */
export interface ProvisioningKey {
  id: string;
  workspaceId: string;
  integration: string;
  tenant: string;
  codeHash: string;
  actor: string;
}

const COLUMNS = 'p.id, w.name AS workspace, p.integration, p.tenant, p.code_hash, p.status, p.result, p.error, p.created_at, p.updated_at';
const SELECT = `SELECT ${COLUMNS} FROM integration_provisionings p JOIN workspaces w ON w.id = p.workspace_id`;

const INSERT = `INSERT INTO integration_provisionings (id, workspace_id, integration, tenant, code_hash, created_by, status, result, error)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;

/**
 * The record of provisioning runs. The API writes RUNNING when it starts a run and the workflow
 * writes the outcome; either may come first, so both are upserts that never move a run back.
 * The workflow's write also fixes the code hash: a request that joined a run started for
 * another code may have written the row first.
 */
export class ProvisioningStore {
  constructor(private readonly pg: Pool) {}

  async get(workspaceId: string, id: string): Promise<ProvisioningRow | undefined> {
    const { rows } = await this.pg.query<ProvisioningRow>(`${SELECT} WHERE p.workspace_id = $1 AND p.id = $2`, [workspaceId, id]);
    return rows[0];
  }

  /** The workspace's runs, newest first, optionally of one tenant only. */
  async list(workspaceId: string, filter: { tenant?: string; limit: number }): Promise<ProvisioningRow[]> {
    const { rows } = await this.pg.query<ProvisioningRow>(
      `${SELECT} WHERE p.workspace_id = $1 AND ($2::text IS NULL OR p.tenant = $2) ORDER BY p.created_at DESC, p.id DESC LIMIT $3`,
      [workspaceId, filter.tenant ?? null, filter.limit],
    );
    return rows;
  }

  /**
   * Deletes the record of a finished run (never what the run made). A run in progress still
   * writes its outcome, which would bring the record back: it is left alone and reported.
   */
  async deleteFinished(workspaceId: string, id: string): Promise<{ deleted: ProvisioningRow } | { running: ProvisioningRow } | undefined> {
    const { rows } = await this.pg.query<ProvisioningRow>(
      `WITH p AS (DELETE FROM integration_provisionings WHERE workspace_id = $1 AND id = $2 AND status <> 'RUNNING' RETURNING *)
       SELECT ${COLUMNS} FROM p JOIN workspaces w ON w.id = p.workspace_id`,
      [workspaceId, id],
    );
    if (rows[0]) return { deleted: rows[0] };
    const current = await this.get(workspaceId, id);
    if (!current) return undefined;
    // It finished between the two statements: delete it now.
    return current.status === 'RUNNING' ? { running: current } : this.deleteFinished(workspaceId, id);
  }

  /** The latest run for the same authorization code: a retried request gets it back. */
  async findByCode(workspaceId: string, integration: string, tenant: string, codeHash: string): Promise<ProvisioningRow | undefined> {
    const { rows } = await this.pg.query<ProvisioningRow>(
      `${SELECT} WHERE p.workspace_id = $1 AND p.integration = $2 AND p.tenant = $3 AND p.code_hash = $4 ORDER BY p.created_at DESC LIMIT 1`,
      [workspaceId, integration, tenant, codeHash],
    );
    return rows[0];
  }

  async recordStarted(key: ProvisioningKey): Promise<void> {
    await this.pg.query(`${INSERT} ON CONFLICT (id) DO NOTHING`, [key.id, key.workspaceId, key.integration, key.tenant, key.codeHash, key.actor, 'RUNNING', null, null]);
  }

  async recordOutcome(key: ProvisioningKey, outcome: { status: 'SUCCEEDED'; result: ProvisioningResult } | { status: 'FAILED'; error: string }): Promise<void> {
    const result = outcome.status === 'SUCCEEDED' ? outcome.result : null;
    const error = outcome.status === 'FAILED' ? outcome.error : null;
    await this.pg.query(
      `${INSERT} ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, result = EXCLUDED.result, error = EXCLUDED.error,
         code_hash = EXCLUDED.code_hash, updated_at = now()`,
      [key.id, key.workspaceId, key.integration, key.tenant, key.codeHash, key.actor, outcome.status, result, error],
    );
  }
}
