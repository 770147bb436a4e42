import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import type { PreviewSpec } from '../domain/sandbox/preview';
import { announceRouteChanges } from './route-notices';

/** A preview as stored. */
export interface PreviewRow {
  id: string;
  workspace_id: string;
  sandbox_id: string;
  name: string;
  display_name: string;
  label: string;
  spec: PreviewSpec;
  expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
  created_by: string | null;
  updated_by: string | null;
}

/** A token as stored: its value only sealed. */
export interface PreviewTokenRow {
  id: string;
  preview_id: string;
  name: string;
  sealed_token: string;
  expires_at: Date;
  created_at: Date;
}

/** What a new or changed preview is made of. */
export interface PreviewWrite {
  name: string;
  displayName: string;
  label: string;
  spec: PreviewSpec;
  expiresAt: Date | undefined;
  actor: string;
}

/** Which unique rule a write broke: the preview's name on its sandbox, or its URL label platform-wide. */
export type PreviewConflict = 'name' | 'label';

/** What the preview host needs to serve one preview: its sandbox, its spec and its tokens' digests. */
export interface PreviewRoute {
  previewId: string;
  workspaceId: string;
  workspace: string;
  /** The sandbox's resource id: a later sandbox of the same name is not this preview's. */
  sandboxId: string;
  sandboxName: string;
  spec: PreviewSpec;
  expiresAt: number | undefined;
  /** Digest of each token's value -> when it expires (ms). */
  tokens: Map<string, number>;
}

const COLUMNS = 'id, workspace_id, sandbox_id, name, display_name, label, spec, expires_at, created_at, updated_at, created_by, updated_by';

function conflictOf(err: unknown): PreviewConflict | undefined {
  const { code, constraint } = err as { code?: string; constraint?: string };
  if (code !== '23505') return undefined;
  return constraint?.includes('label') ? 'label' : 'name';
}

/**
 * The previews of sandboxes and their tokens. Every change is announced to the gateways
 * (route notices, by the preview's id), so a deleted preview or token stops at once.
 */
export class SandboxPreviewStore {
  constructor(private readonly pg: Pool) {}

  /** Deletes the previews of a sandbox whose expiry has passed (the gateway refuses them already). */
  async deleteExpired(sandboxId: string): Promise<void> {
    const { rows } = await this.pg.query<{ id: string }>('DELETE FROM sandbox_previews WHERE sandbox_id = $1 AND expires_at <= now() RETURNING id', [sandboxId]);
    await announceRouteChanges(this.pg, ...rows.map((r) => r.id));
  }

  async list(sandboxId: string): Promise<PreviewRow[]> {
    const { rows } = await this.pg.query<PreviewRow>(`SELECT ${COLUMNS} FROM sandbox_previews WHERE sandbox_id = $1 ORDER BY name`, [sandboxId]);
    return rows;
  }

  async get(sandboxId: string, name: string): Promise<PreviewRow | undefined> {
    const { rows } = await this.pg.query<PreviewRow>(`SELECT ${COLUMNS} FROM sandbox_previews WHERE sandbox_id = $1 AND name = $2`, [sandboxId, name]);
    return rows[0];
  }

  /** The new row, or which unique rule it broke. */
  async create(workspaceId: string, sandboxId: string, write: PreviewWrite): Promise<PreviewRow | PreviewConflict> {
    try {
      const { rows } = await this.pg.query<PreviewRow>(
        `INSERT INTO sandbox_previews (id, workspace_id, sandbox_id, name, display_name, label, spec, expires_at, created_by, updated_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING ${COLUMNS}`,
        [randomUUID(), workspaceId, sandboxId, write.name, write.displayName, write.label, write.spec, write.expiresAt ?? null, write.actor],
      );
      return rows[0];
    } catch (err) {
      const conflict = conflictOf(err);
      if (conflict) return conflict;
      throw err;
    }
  }

  /** The changed row, undefined when it is gone, or the label conflict. */
  async update(id: string, write: PreviewWrite): Promise<PreviewRow | PreviewConflict | undefined> {
    try {
      const { rows } = await this.pg.query<PreviewRow>(
        `UPDATE sandbox_previews SET display_name = $2, label = $3, spec = $4, expires_at = $5, updated_by = $6, updated_at = now()
         WHERE id = $1 RETURNING ${COLUMNS}`,
        [id, write.displayName, write.label, write.spec, write.expiresAt ?? null, write.actor],
      );
      await announceRouteChanges(this.pg, id);
      return rows[0];
    } catch (err) {
      const conflict = conflictOf(err);
      if (conflict) return conflict;
      throw err;
    }
  }

  async delete(sandboxId: string, name: string): Promise<PreviewRow | undefined> {
    const { rows } = await this.pg.query<PreviewRow>(`DELETE FROM sandbox_previews WHERE sandbox_id = $1 AND name = $2 RETURNING ${COLUMNS}`, [sandboxId, name]);
    if (rows[0]) await announceRouteChanges(this.pg, rows[0].id);
    return rows[0];
  }

  /** Deletes the preview of this workspace holding `label` (a forced create takes its URL); true when there was one. */
  async deleteByLabel(workspaceId: string, label: string): Promise<boolean> {
    const { rows } = await this.pg.query<{ id: string }>('DELETE FROM sandbox_previews WHERE workspace_id = $1 AND label = $2 RETURNING id', [workspaceId, label]);
    await announceRouteChanges(this.pg, ...rows.map((r) => r.id));
    return rows.length > 0;
  }

  /** The new token, or undefined when the name is taken on this preview. */
  async createToken(previewId: string, token: { name: string; digest: string; sealed: string; expiresAt: Date }): Promise<PreviewTokenRow | undefined> {
    const { rows } = await this.pg.query<PreviewTokenRow>(
      `INSERT INTO sandbox_preview_tokens (id, preview_id, name, digest, sealed_token, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (preview_id, name) DO NOTHING RETURNING id, preview_id, name, sealed_token, expires_at, created_at`,
      [randomUUID(), previewId, token.name, token.digest, token.sealed, token.expiresAt],
    );
    if (rows[0]) await announceRouteChanges(this.pg, previewId);
    return rows[0];
  }

  async listTokens(previewId: string): Promise<PreviewTokenRow[]> {
    const { rows } = await this.pg.query<PreviewTokenRow>(
      'SELECT id, preview_id, name, sealed_token, expires_at, created_at FROM sandbox_preview_tokens WHERE preview_id = $1 ORDER BY created_at, name',
      [previewId],
    );
    return rows;
  }

  async deleteToken(previewId: string, name: string): Promise<boolean> {
    const { rowCount } = await this.pg.query('DELETE FROM sandbox_preview_tokens WHERE preview_id = $1 AND name = $2', [previewId, name]);
    if (rowCount) await announceRouteChanges(this.pg, previewId);
    return Boolean(rowCount);
  }

  /** The preview at a URL label, with its sandbox and tokens, for the preview host. */
  async route(label: string): Promise<PreviewRoute | undefined> {
    const { rows } = await this.pg.query<{ id: string; workspace_id: string; workspace: string; sandbox_id: string; sandbox_name: string; spec: PreviewSpec; expires_at: Date | null; tokens: { digest: string; expires_at: string }[] }>({
      name: 'preview-route',
      text: `SELECT p.id, p.workspace_id, w.name AS workspace, p.sandbox_id, r.name AS sandbox_name, p.spec, p.expires_at,
               COALESCE((SELECT json_agg(json_build_object('digest', t.digest, 'expires_at', t.expires_at)) FROM sandbox_preview_tokens t WHERE t.preview_id = p.id), '[]') AS tokens
             FROM sandbox_previews p JOIN resources r ON r.id = p.sandbox_id JOIN workspaces w ON w.id = p.workspace_id
             WHERE p.label = $1`,
      values: [label],
    });
    const row = rows[0];
    if (!row) return undefined;
    return {
      previewId: row.id,
      workspaceId: row.workspace_id,
      workspace: row.workspace,
      sandboxId: row.sandbox_id,
      sandboxName: row.sandbox_name,
      spec: row.spec,
      expiresAt: row.expires_at?.getTime(),
      tokens: new Map(row.tokens.map((t) => [t.digest, Date.parse(t.expires_at)])),
    };
  }
}
