import type { Pool } from 'pg';
import { newUuid } from '../domain/ids';
import { MAX_RESOURCE_EVENTS, ROUTES_CHANNEL, type ResourceEvent, type ResourceStatus } from '../domain/resource';

export interface ResourceRow {
  id: string;
  workspace: string;
  kind: string;
  name: string;
  display_name: string;
  labels: Record<string, string>;
  spec: Record<string, unknown>;
  status: ResourceStatus;
  state: Record<string, unknown>;
  events: ResourceEvent[];
  generation: number;
  created_at: Date;
  updated_at: Date;
  created_by: string | null;
  updated_by: string | null;
  /** The node it is placed on (sandboxes, volumes); null before placement or for other kinds. */
  node_id: string | null;
}

const COLUMNS = `r.id, w.name AS workspace, r.kind, r.name, r.display_name, r.labels, r.spec, r.status, r.state, r.events,
  r.generation, r.created_at, r.updated_at, r.created_by, r.updated_by, r.node_id`;

export interface ResourceKey {
  workspaceId: string;
  kind: string;
  name: string;
}

export interface ResourceInput {
  displayName: string;
  labels: Record<string, string>;
  spec: Record<string, unknown>;
}

/** Persistence of the resource envelope, shared by every workload kind. */
export class ResourceStore {
  constructor(private readonly pg: Pool) {}

  async list(workspaceId: string, kind: string): Promise<ResourceRow[]> {
    const { rows } = await this.pg.query<ResourceRow>({
      name: 'resources-list',
      text: `SELECT ${COLUMNS} FROM resources r JOIN workspaces w ON w.id = r.workspace_id
        WHERE r.workspace_id = $1 AND r.kind = $2 ORDER BY r.name`,
      values: [workspaceId, kind],
    });
    return rows;
  }

  async get(key: ResourceKey): Promise<ResourceRow | undefined> {
    // Named: the gateways look resources up on every request.
    const { rows } = await this.pg.query<ResourceRow>({
      name: 'resources-get',
      text: `SELECT ${COLUMNS} FROM resources r JOIN workspaces w ON w.id = r.workspace_id
        WHERE r.workspace_id = $1 AND r.kind = $2 AND r.name = $3`,
      values: [key.workspaceId, key.kind, key.name],
    });
    return rows[0];
  }

  /** Inserts a new resource; returns undefined when the name is taken (the caller answers 409). */
  async create(
    key: ResourceKey,
    input: ResourceInput,
    status: ResourceStatus,
    message: string,
    actor: string,
    state: Record<string, unknown> = {},
  ): Promise<ResourceRow | undefined> {
    const events: ResourceEvent[] = [{ type: 'Normal', status, message, time: new Date().toISOString() }];
    const { rows } = await this.pg.query<{ id: string }>(
      `INSERT INTO resources (id, workspace_id, kind, name, display_name, labels, spec, status, state, events, created_by, updated_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)
       ON CONFLICT (workspace_id, kind, name) DO NOTHING RETURNING id`,
      [newUuid(), key.workspaceId, key.kind, key.name, input.displayName, input.labels, input.spec, status, state, JSON.stringify(events), actor],
    );
    return rows[0] ? this.get(key) : undefined;
  }

  /** Replaces the user-owned parts (display name, labels, spec); status and history stay. */
  async update(key: ResourceKey, input: ResourceInput, actor: string): Promise<ResourceRow | undefined> {
    const { rowCount } = await this.pg.query(
      `UPDATE resources SET display_name = $4, labels = $5, spec = $6, generation = generation + 1,
              updated_at = now(), updated_by = $7
        WHERE workspace_id = $1 AND kind = $2 AND name = $3`,
      [key.workspaceId, key.kind, key.name, input.displayName, input.labels, input.spec, actor],
    );
    return rowCount ? this.get(key) : undefined;
  }

  /**
   * Moves a resource to a new status and records why, keeping the last MAX_RESOURCE_EVENTS events.
   * With `from`, only a resource still in that status moves (a step that lost a race does nothing).
   */
  async transition(
    id: string,
    status: ResourceStatus,
    event: Omit<ResourceEvent, 'status' | 'time'>,
    state?: Record<string, unknown>,
    from?: ResourceStatus,
  ): Promise<boolean> {
    const entry = { ...event, status, time: new Date().toISOString() };
    const moved = await this.announcing(
      `UPDATE resources
          SET status = $2,
              events = (CASE WHEN jsonb_array_length(events) >= $4 THEN events - 0 ELSE events END) || jsonb_build_array($3::jsonb),
              state = state || COALESCE($5::jsonb, '{}'::jsonb),
              updated_at = now()
        WHERE id = $1 AND ($6::text IS NULL OR status = $6)`,
      [id, status, JSON.stringify(entry), MAX_RESOURCE_EVENTS, state ? JSON.stringify(state) : null, from ?? null],
    );
    return moved === 1;
  }

  /** Records an event under the current status and merges runtime facts (announced like a transition): news that changes no status. */
  async note(id: string, event: Omit<ResourceEvent, 'status' | 'time'>, state: Record<string, unknown>): Promise<boolean> {
    const noted = await this.announcing(
      `UPDATE resources
          SET events = (CASE WHEN jsonb_array_length(events) >= $5 THEN events - 0 ELSE events END)
                       || jsonb_build_array(jsonb_build_object('type', $2::text, 'status', status, 'message', $3::text, 'time', $4::text)),
              state = state || $6::jsonb,
              updated_at = now()
        WHERE id = $1`,
      [id, event.type, event.message, new Date().toISOString(), MAX_RESOURCE_EVENTS, JSON.stringify(state)],
    );
    return noted === 1;
  }

  /** Merges runtime facts (e.g. a sandbox's RUNNING/STANDBY state) without touching status or history. */
  async mergeState(id: string, state: Record<string, unknown>): Promise<void> {
    await this.pg.query('UPDATE resources SET state = state || $2::jsonb WHERE id = $1', [id, JSON.stringify(state)]);
  }

  /**
   * Adds bytes sandboxes' egress carried to their totals (`state.network`), all in one statement:
   * increments, so counts from several node workers in turn (a restart) add up and concurrent
   * additions do not lose each other; rows are locked in id order, so two batches never deadlock.
   */
  async addSandboxTraffic(counts: { id: string; bytesOut: number; bytesIn: number }[]): Promise<void> {
    if (counts.length === 0) return;
    const sorted = [...counts].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    await this.pg.query(
      `WITH added AS (SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::bigint[]) AS t(id, bytes_out, bytes_in)),
            locked AS (SELECT r.id FROM resources r JOIN added USING (id) ORDER BY r.id FOR UPDATE OF r)
       UPDATE resources r SET state = r.state || jsonb_build_object('network', jsonb_build_object(
                'bytesOut', COALESCE((r.state->'network'->>'bytesOut')::bigint, 0) + added.bytes_out,
                'bytesIn', COALESCE((r.state->'network'->>'bytesIn')::bigint, 0) + added.bytes_in))
         FROM added JOIN locked USING (id)
        WHERE r.id = added.id`,
      [sorted.map((c) => c.id), sorted.map((c) => c.bytesOut), sorted.map((c) => c.bytesIn)],
    );
  }

  async deleteById(id: string): Promise<void> {
    await this.announcing('DELETE FROM resources WHERE id = $1', [id]);
  }

  async delete(key: ResourceKey): Promise<ResourceRow | undefined> {
    const current = await this.get(key);
    if (!current) return undefined;
    await this.deleteById(current.id);
    return current;
  }

  /**
   * Runs an UPDATE or DELETE of resource rows (a statement without RETURNING) and announces each
   * row it changed on ROUTES_CHANNEL: gateways cache routes by a resource's status and state and
   * drop them at once (the notice is delivered at commit). Answers how many rows changed.
   */
  private async announcing(statement: string, params: unknown[]): Promise<number> {
    const { rowCount } = await this.pg.query(
      `WITH changed AS (${statement} RETURNING id) SELECT pg_notify($${params.length + 1}, id::text) FROM changed`,
      [...params, ROUTES_CHANNEL],
    );
    return rowCount ?? 0;
  }
}
