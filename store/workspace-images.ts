import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import type { ImageState } from '../domain/images/workspace-image';

/** What a build reports while it runs: the step it is at, of how many. */
export interface ImageProgress {
  step: number;
  steps: number;
  instruction: string;
  cached: boolean;
}

export interface ImageEvent {
  type: 'Normal' | 'Warning';
  message: string;
  time: string;
}

export interface WorkspaceImageRow {
  id: string;
  workspace_id: string;
  name: string;
  tag: string;
  state: ImageState;
  reason: string | null;
  digest: string | null;
  size_bytes: string | null;
  progress: ImageProgress | null;
  events: ImageEvent[];
  build: number;
  context_sha256: string | null;
  node_queue: string;
  created_at: Date;
  updated_at: Date;
  created_by: string | null;
}

/** Events kept per image tag: the newest ones. */
const MAX_EVENTS = 50;
const event = (type: ImageEvent['type'], message: string) => JSON.stringify([{ type, message, time: new Date().toISOString() }]);
const APPEND = `events = (CASE WHEN jsonb_array_length(events) >= ${MAX_EVENTS} THEN events - 0 ELSE events END) || $2::jsonb, updated_at = now()`;

/** The workspaces' own images, one row per `name:tag`. */
export class WorkspaceImageStore {
  constructor(private readonly pg: Pool) {}

  /**
   * Starts a build of `name:tag`: a new row, or the next build of an existing one that is not
   * building now. Undefined when a build of it is under way (the caller answers 409).
   */
  async startBuild(input: { workspaceId: string; name: string; tag: string; contextSha256: string; nodeQueue: string; actor: string }): Promise<WorkspaceImageRow | undefined> {
    const { rows } = await this.pg.query<WorkspaceImageRow>(
      `INSERT INTO workspace_images AS i (id, workspace_id, name, tag, state, context_sha256, node_queue, events, created_by)
       VALUES ($1, $2, $3, $4, 'BUILDING', $5, $6, $7::jsonb, $8)
       ON CONFLICT (workspace_id, name, tag) DO UPDATE
         SET state = 'BUILDING', reason = NULL, progress = NULL, build = i.build + 1, context_sha256 = $5, node_queue = $6,
             events = (CASE WHEN jsonb_array_length(i.events) >= ${MAX_EVENTS} THEN i.events - 0 ELSE i.events END) || $7::jsonb, updated_at = now()
         WHERE i.state <> 'BUILDING'
       RETURNING *`,
      [randomUUID(), input.workspaceId, input.name, input.tag, input.contextSha256, input.nodeQueue, event('Normal', `build context received (sha256 ${input.contextSha256.slice(0, 12)})`), input.actor],
    );
    return rows[0];
  }

  async find(workspaceId: string, name: string, tag: string): Promise<WorkspaceImageRow | undefined> {
    const { rows } = await this.pg.query<WorkspaceImageRow>('SELECT * FROM workspace_images WHERE workspace_id = $1 AND name = $2 AND tag = $3', [workspaceId, name, tag]);
    return rows[0];
  }

  /** The workspace's image tags, by name then newest first; one name's when given. */
  async list(workspaceId: string, name?: string): Promise<WorkspaceImageRow[]> {
    const { rows } = await this.pg.query<WorkspaceImageRow>(
      'SELECT * FROM workspace_images WHERE workspace_id = $1 AND ($2::text IS NULL OR name = $2) ORDER BY name, updated_at DESC, tag',
      [workspaceId, name ?? null],
    );
    return rows;
  }

  /** A build's step, on its progress and its events; nothing once the row is gone or settled. */
  async progress(id: string, progress: ImageProgress): Promise<void> {
    const message = `step ${progress.step}/${progress.steps}: ${progress.instruction}${progress.cached ? ' (cached)' : ''}`;
    await this.pg.query(`UPDATE workspace_images SET progress = $3, ${APPEND} WHERE id = $1 AND state = 'BUILDING'`, [id, event('Normal', message), JSON.stringify(progress)]);
  }

  /** The outcome of the build `build` (an older build's late outcome changes nothing). */
  async settle(id: string, build: number, outcome: { state: 'READY'; digest: string; sizeBytes: number } | { state: 'FAILED'; reason: string }): Promise<void> {
    const message = outcome.state === 'READY' ? `built: ${outcome.digest} (${outcome.sizeBytes} bytes stored)` : `build failed: ${outcome.reason}`;
    await this.pg.query(
      `UPDATE workspace_images SET state = $3, reason = $4,
         digest = CASE WHEN $3 = 'READY' THEN $5 ELSE digest END, size_bytes = CASE WHEN $3 = 'READY' THEN $6::bigint ELSE size_bytes END, ${APPEND}
       WHERE id = $1 AND build = $7 AND state = 'BUILDING'`,
      [id, event(outcome.state === 'READY' ? 'Normal' : 'Warning', message), outcome.state, outcome.state === 'FAILED' ? outcome.reason : null, outcome.state === 'READY' ? outcome.digest : null, outcome.state === 'READY' ? outcome.sizeBytes : null, build],
    );
  }

  async delete(id: string): Promise<void> {
    await this.pg.query('DELETE FROM workspace_images WHERE id = $1', [id]);
  }

  /**
   * The workspace's sandboxes and workloads whose `spec.runtime.image` names `name:tag` (`name`
   * alone when the tag is latest), as `kind/name`: what a deletion would leave without an image.
   */
  async users(workspaceId: string, name: string, tag: string): Promise<string[]> {
    const references = tag === 'latest' ? [name, `${name}:latest`] : [`${name}:${tag}`];
    const { rows } = await this.pg.query<{ kind: string; name: string }>(
      `SELECT kind, name FROM resources WHERE workspace_id = $1 AND spec->'runtime'->>'image' = ANY($2::text[]) ORDER BY kind, name`,
      [workspaceId, references],
    );
    return rows.map((row) => `${row.kind}/${row.name}`);
  }
}
