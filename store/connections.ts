import type { Pool } from 'pg';
import { newUuid } from '../domain/ids';
import { maskSecrets } from '../domain/integrations/secrets';
import type { SecretBox } from '../domain/secret-box';
import { ROUTES_CHANNEL } from '../domain/resource';

/** A connection as stored; the secrets themselves only come out through `openSecrets`. */
export interface ConnectionRow {
  id: string;
  workspace: string;
  name: string;
  display_name: string;
  labels: Record<string, string>;
  integration: string;
  secret_preview: Record<string, string>;
  tenant: string | null;
  provisioning_id: string | null;
  created_at: Date;
  updated_at: Date;
  created_by: string | null;
  updated_by: string | null;
}

export interface ConnectionInput {
  name: string;
  displayName: string;
  labels: Record<string, string>;
  integration: string;
  secret: Record<string, string>;
}

/** Who provisioned a connection: set by the provisioning saga, absent for connections made by hand. */
export interface ConnectionOwner {
  tenant: string;
  provisioningId: string;
}

export type UpsertOutcome =
  | { outcome: 'created' | 'updated'; row: ConnectionRow; createdByThisRun: boolean }
  /** The name belongs to a connection not provisioned for this tenant and integration. */
  | { outcome: 'taken'; row: ConnectionRow };

const COLUMNS = `c.id, w.name AS workspace, c.name, c.display_name, c.labels, c.integration, c.secret_preview, c.tenant,
  c.provisioning_id, c.created_at, c.updated_at, c.created_by, c.updated_by`;
const FROM = 'integration_connections c JOIN workspaces w ON w.id = c.workspace_id';

/** The integration of each name among `names` that is a connection of the workspace (no secrets involved). */
export async function connectionIntegrations(pg: Pool, workspaceId: string, names: string[]): Promise<Map<string, string>> {
  if (names.length === 0) return new Map();
  const { rows } = await pg.query<{ name: string; integration: string }>(
    'SELECT name, integration FROM integration_connections WHERE workspace_id = $1 AND name = ANY($2::text[])',
    [workspaceId, names],
  );
  return new Map(rows.map((row) => [row.name, row.integration]));
}

/** A workload whose spec names a connection, or a sandbox pulling its image with one. */
export interface BoundWorkload {
  kind: 'functions' | 'models' | 'sandboxes';
  name: string;
}

/**
 * Persistence of integration connections. Secrets are sealed with the master key, bound to the
 * row id, so a sealed value copied onto another row does not open.
 */
export class ConnectionStore {
  constructor(
    private readonly pg: Pool,
    private readonly box: SecretBox,
  ) {}

  async list(workspaceId: string): Promise<ConnectionRow[]> {
    const { rows } = await this.pg.query<ConnectionRow>(`SELECT ${COLUMNS} FROM ${FROM} WHERE c.workspace_id = $1 ORDER BY c.name`, [workspaceId]);
    return rows;
  }

  async get(workspaceId: string, name: string): Promise<ConnectionRow | undefined> {
    const { rows } = await this.pg.query<ConnectionRow>(`SELECT ${COLUMNS} FROM ${FROM} WHERE c.workspace_id = $1 AND c.name = $2`, [workspaceId, name]);
    return rows[0];
  }

  async openSecrets(row: Pick<ConnectionRow, 'id'>): Promise<Record<string, string>> {
    const { rows } = await this.pg.query<{ sealed_secret: string }>('SELECT sealed_secret FROM integration_connections WHERE id = $1', [row.id]);
    if (!rows[0]) throw new Error('the connection no longer exists');
    return JSON.parse(this.box.open(rows[0].sealed_secret, row.id)) as Record<string, string>;
  }

  /** Inserts a connection; returns undefined when the name is taken (the caller answers 409). */
  async create(workspaceId: string, input: ConnectionInput, actor: string, owner?: ConnectionOwner): Promise<ConnectionRow | undefined> {
    const id = newUuid();
    const { rowCount } = await this.pg.query(
      `INSERT INTO integration_connections
         (id, workspace_id, name, display_name, labels, integration, sealed_secret, secret_preview, tenant, provisioning_id, created_by, updated_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)
       ON CONFLICT (workspace_id, name) DO NOTHING`,
      [id, workspaceId, input.name, input.displayName, input.labels, input.integration, this.seal(input.secret, id), maskSecrets(input.secret),
        owner?.tenant ?? null, owner?.provisioningId ?? null, actor],
    );
    return rowCount ? this.get(workspaceId, input.name) : undefined;
  }

  /** Replaces display name, labels and secrets; the integration and the owner stay. */
  async update(row: Pick<ConnectionRow, 'id'>, input: Omit<ConnectionInput, 'name' | 'integration'>, actor: string): Promise<boolean> {
    const { rowCount } = await this.pg.query(
      `UPDATE integration_connections SET display_name = $2, labels = $3, sealed_secret = $4, secret_preview = $5, updated_at = now(), updated_by = $6
        WHERE id = $1`,
      [row.id, input.displayName, input.labels, this.seal(input.secret, row.id), maskSecrets(input.secret), actor],
    );
    if (rowCount === 1) await this.secretsChanged(row);
    return rowCount === 1;
  }

  /**
   * The provisioning saga's step: create the tenant's connection, or refresh its secrets when an
   * earlier provisioning of the same tenant made it. A hand-made connection of that name is
   * never overwritten. Safe to repeat: a retried step recognises the row it created.
   */
  async upsertProvisioned(workspaceId: string, input: ConnectionInput, actor: string, owner: ConnectionOwner): Promise<UpsertOutcome> {
    // A concurrent delete between the attempts below sends us round again.
    for (;;) {
      const created = await this.create(workspaceId, input, actor, owner);
      if (created) return { outcome: 'created', row: created, createdByThisRun: true };
      const existing = await this.get(workspaceId, input.name);
      if (!existing) continue;
      if (existing.tenant !== owner.tenant || existing.integration !== input.integration) return { outcome: 'taken', row: existing };
      if (await this.update(existing, input, actor)) {
        return { outcome: 'updated', row: (await this.get(workspaceId, input.name)) ?? existing, createdByThisRun: existing.provisioning_id === owner.provisioningId };
      }
    }
  }

  /** Functions, models and sandboxes of the workspace bound to the connection: it cannot go while they use it. */
  async boundWorkloads(workspaceId: string, name: string): Promise<BoundWorkload[]> {
    const { rows } = await this.pg.query<BoundWorkload>(
      `SELECT kind, name FROM resources
        WHERE workspace_id = $1
          AND ((kind IN ('functions', 'models') AND spec->'integrationConnections' ? $2)
            OR (kind = 'sandboxes' AND spec->'runtime'->>'registryConnection' = $2))
        ORDER BY kind, name`,
      [workspaceId, name],
    );
    return rows;
  }

  async delete(workspaceId: string, name: string): Promise<ConnectionRow | undefined> {
    const current = await this.get(workspaceId, name);
    if (!current) return undefined;
    await this.pg.query('DELETE FROM integration_connections WHERE id = $1', [current.id]);
    await this.secretsChanged(current);
    return current;
  }

  /** Compensation: removes the connection only if the given provisioning created it. */
  async deleteProvisioned(workspaceId: string, name: string, provisioningId: string): Promise<boolean> {
    const { rowCount } = await this.pg.query('DELETE FROM integration_connections WHERE workspace_id = $1 AND name = $2 AND provisioning_id = $3', [
      workspaceId,
      name,
      provisioningId,
    ]);
    return rowCount === 1;
  }

  /** Gateways holding the connection's opened secrets (provider models' keys) drop them. */
  private async secretsChanged(row: Pick<ConnectionRow, 'id'>): Promise<void> {
    await this.pg.query('SELECT pg_notify($1, $2)', [ROUTES_CHANNEL, row.id]);
  }

  private seal(secret: Record<string, string>, id: string): string {
    return this.box.seal(JSON.stringify(secret), id);
  }
}
