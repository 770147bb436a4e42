import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { canonicalImageReference, parseImageReference } from '../domain/images/reference';
import type { ImageEvent } from './workspace-images';

import type { PullProgress } from '../domain/images/pull-progress';

export type { PullProgress } from '../domain/images/pull-progress';

export type RegistryImageState = 'PULLING' | 'READY' | 'FAILED';

export interface RegistryImageRow {
  id: string;
  workspace_id: string;
  reference: string;
  node_queue: string;
  state: RegistryImageState;
  reason: string | null;
  digest: string | null;
  size_bytes: string | null;
  progress: PullProgress | null;
  events: ImageEvent[];
  created_at: Date;
  updated_at: Date;
}

/** Events kept per image: the newest ones. */
const MAX_EVENTS = 50;
const events = (type: ImageEvent['type'], messages: string[]) => JSON.stringify(messages.map((message) => ({ type, message, time: new Date().toISOString() })));
const event = (type: ImageEvent['type'], message: string) => events(type, [message]);
/** Appends the events in $4 (a JSON array), keeping the newest MAX_EVENTS. */
const APPEND = (alias: string) =>
  `events = (SELECT COALESCE(jsonb_agg(e ORDER BY n), '[]'::jsonb) FROM (SELECT e, n FROM jsonb_array_elements(${alias}events || $4::jsonb) WITH ORDINALITY AS t(e, n) ORDER BY n DESC LIMIT ${MAX_EVENTS}) kept), updated_at = now()`;

/** A reference as rows file it: every part spelt out, so `box:1` written two ways is one image. */
export const canonicalReference = (reference: string) => canonicalImageReference(parseImageReference(reference));

/** The images of registries each workspace had pulled, one row per reference and node (see migration 026). */
export class RegistryImageStore {
  constructor(private readonly pg: Pool) {}

  /** A pull starts: the row is PULLING (made if new), with an event saying who asked. */
  async startPull(workspaceId: string, reference: string, nodeQueue: string, message: string): Promise<void> {
    await this.pg.query(
      `INSERT INTO registry_images AS i (id, workspace_id, reference, node_queue, state, events)
       VALUES ($5, $1, $2, $3, 'PULLING', $4::jsonb)
       ON CONFLICT (workspace_id, reference, node_queue) DO UPDATE
         SET state = 'PULLING', reason = NULL, progress = NULL, ${APPEND('i.')}`,
      [workspaceId, canonicalReference(reference), nodeQueue, event('Normal', message), randomUUID()],
    );
  }

  /** The pull's progress while PULLING, with an event for each message given (the tenths it passed). */
  async progress(workspaceId: string, reference: string, nodeQueue: string, progress: PullProgress, messages: string[] = []): Promise<void> {
    await this.pg.query(`UPDATE registry_images AS i SET progress = $5::jsonb, ${APPEND('i.')} WHERE workspace_id = $1 AND reference = $2 AND node_queue = $3 AND state = 'PULLING'`, [
      workspaceId,
      canonicalReference(reference),
      nodeQueue,
      events('Normal', messages),
      JSON.stringify(progress),
    ]);
  }

  /** The pull's outcome: READY with what the node stores, or FAILED with the reason (the digest of an earlier pull stays). */
  async settle(
    workspaceId: string,
    reference: string,
    nodeQueue: string,
    outcome: { state: 'READY'; digest: string; sizeBytes: number; message: string; progress?: PullProgress } | { state: 'FAILED'; reason: string },
  ): Promise<void> {
    const ready = outcome.state === 'READY';
    await this.pg.query(
      `INSERT INTO registry_images AS i (id, workspace_id, reference, node_queue, state, reason, digest, size_bytes, events)
       VALUES ($9, $1, $2, $3, $5, $6, $7, $8, $4::jsonb)
       ON CONFLICT (workspace_id, reference, node_queue) DO UPDATE
         SET state = $5, reason = $6, digest = COALESCE($7, i.digest), size_bytes = COALESCE($8, i.size_bytes),
             progress = CASE WHEN $5 = 'READY' THEN COALESCE($10::jsonb, i.progress) ELSE NULL END, ${APPEND('i.')}`,
      [
        workspaceId,
        canonicalReference(reference),
        nodeQueue,
        event(ready ? 'Normal' : 'Warning', ready ? outcome.message : `pull failed: ${outcome.reason}`),
        outcome.state,
        ready ? null : outcome.reason,
        ready ? outcome.digest : null,
        ready ? outcome.sizeBytes : null,
        randomUUID(),
        ready && outcome.progress ? JSON.stringify(outcome.progress) : null,
      ],
    );
  }

  async list(workspaceId: string): Promise<RegistryImageRow[]> {
    const { rows } = await this.pg.query<RegistryImageRow>('SELECT * FROM registry_images WHERE workspace_id = $1 ORDER BY reference, node_queue', [workspaceId]);
    return rows;
  }

  /** The rows of one reference (on every node), however it is written. */
  async find(workspaceId: string, reference: string): Promise<RegistryImageRow[]> {
    const { rows } = await this.pg.query<RegistryImageRow>('SELECT * FROM registry_images WHERE workspace_id = $1 AND reference = $2 ORDER BY node_queue', [workspaceId, canonicalReference(reference)]);
    return rows;
  }

  async delete(ids: string[]): Promise<void> {
    await this.pg.query('DELETE FROM registry_images WHERE id = ANY($1::uuid[])', [ids]);
  }

  /** The workspace's sandboxes and workloads whose `spec.runtime.image` is this reference however written, as `kind/name`. */
  async users(workspaceId: string, reference: string): Promise<string[]> {
    const canonical = canonicalReference(reference);
    const { rows } = await this.pg.query<{ kind: string; name: string; image: string }>(
      `SELECT kind, name, spec->'runtime'->>'image' AS image FROM resources WHERE workspace_id = $1 AND spec->'runtime'->>'image' LIKE '%/%' ORDER BY kind, name`,
      [workspaceId],
    );
    return rows.filter((row) => sameReference(row.image, canonical)).map((row) => `${row.kind}/${row.name}`);
  }
}

function sameReference(image: string, canonical: string): boolean {
  try {
    return canonicalReference(image) === canonical;
  } catch {
    return false;
  }
}
