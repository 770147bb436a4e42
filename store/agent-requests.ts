import type { Pool } from 'pg';
import type { AgentRequestStatus, CallbackStatus } from '../domain/agents/async-requests';

export interface AgentRequestRow {
  id: string;
  workspace_id: string;
  agent_id: string;
  agent_name: string;
  status: AgentRequestStatus;
  path: string;
  headers: Record<string, string>;
  callback_url: string | null;
  callback_status: CallbackStatus | null;
  callback_error: string | null;
  response_status: number | null;
  response_content_type: string | null;
  response_body: Buffer | null;
  error: string | null;
  attempts: number;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  callback_at: Date | null;
}

/** The agent's answer as recorded. */
export interface AgentAnswer {
  statusCode: number;
  contentType: string | null;
  body: Buffer;
}

// Everything but the stored request body, which only the call to the agent needs.
const COLUMNS = `id, workspace_id, agent_id, agent_name, status, path, headers, callback_url, callback_status, callback_error,
  response_status, response_content_type, response_body, error, attempts, created_at, started_at, completed_at, callback_at`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Async agent requests in PostgreSQL: the gateway creates and reads them, the request's workflow
 * moves them on. A result or a failure is written once: the first one recorded stays, so a
 * retried step never changes what the caller was told. The request body is kept only until then.
 */
export class AgentRequestStore {
  constructor(private readonly pg: Pool) {}

  async create(input: {
    id: string;
    workspaceId: string;
    agentId: string;
    agentName: string;
    path: string;
    headers: Record<string, string>;
    body: Buffer;
    callbackUrl: string | undefined;
    actor: string;
  }): Promise<AgentRequestRow> {
    const { rows } = await this.pg.query<AgentRequestRow>(
      `INSERT INTO agent_requests (id, workspace_id, agent_id, agent_name, path, headers, body, callback_url, callback_status, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, CASE WHEN $8::text IS NULL THEN NULL ELSE 'pending' END, $9) RETURNING ${COLUMNS}`,
      [input.id, input.workspaceId, input.agentId, input.agentName, input.path, JSON.stringify(input.headers), input.body, input.callbackUrl ?? null, input.actor],
    );
    return rows[0];
  }

  async delete(id: string): Promise<void> {
    await this.pg.query('DELETE FROM agent_requests WHERE id = $1', [id]);
  }

  /** A request of one agent in one workspace; anything else (another workspace's id) is not found. */
  async find(workspaceId: string, agentName: string, id: string): Promise<AgentRequestRow | undefined> {
    if (!UUID.test(id)) return undefined;
    const { rows } = await this.pg.query<AgentRequestRow>(
      `SELECT ${COLUMNS} FROM agent_requests WHERE id = $1 AND workspace_id = $2 AND agent_name = $3`,
      [id, workspaceId, agentName],
    );
    return rows[0];
  }

  async get(id: string): Promise<AgentRequestRow | undefined> {
    const { rows } = await this.pg.query<AgentRequestRow>(`SELECT ${COLUMNS} FROM agent_requests WHERE id = $1`, [id]);
    return rows[0];
  }

  async body(id: string): Promise<Buffer | undefined> {
    const { rows } = await this.pg.query<{ body: Buffer }>('SELECT body FROM agent_requests WHERE id = $1', [id]);
    return rows[0]?.body;
  }

  /** One more attempt at calling the agent begins; false when the request already ended. */
  async markRunning(id: string): Promise<boolean> {
    const { rowCount } = await this.pg.query(
      `UPDATE agent_requests SET status = 'running', attempts = attempts + 1, started_at = coalesce(started_at, now())
        WHERE id = $1 AND completed_at IS NULL`,
      [id],
    );
    return rowCount === 1;
  }

  /** The agent answered: 2xx succeeds, anything else fails with the answer kept. */
  async recordAnswer(id: string, answer: AgentAnswer): Promise<void> {
    await this.pg.query(
      `UPDATE agent_requests SET status = $2, response_status = $3, response_content_type = $4, response_body = $5, body = ''::bytea, completed_at = now()
        WHERE id = $1 AND completed_at IS NULL`,
      [id, answer.statusCode >= 200 && answer.statusCode < 300 ? 'succeeded' : 'failed', answer.statusCode, answer.contentType, answer.body],
    );
  }

  /** The agent could not be called (or its answer could not be kept). */
  async recordFailure(id: string, error: string): Promise<void> {
    await this.pg.query(
      `UPDATE agent_requests SET status = 'failed', error = $2, body = ''::bytea, completed_at = now() WHERE id = $1 AND completed_at IS NULL`,
      [id, error],
    );
  }

  async recordCallback(id: string, status: Exclude<CallbackStatus, 'pending'>, error?: string): Promise<void> {
    await this.pg.query(
      `UPDATE agent_requests SET callback_status = $2, callback_error = $3, callback_at = now() WHERE id = $1 AND callback_status = 'pending'`,
      [id, status, error ?? null],
    );
  }
}

const iso = (date: Date | null) => (date ? date.toISOString() : null);

/** The agent's answer body for people and programs: parsed JSON when it is JSON, text otherwise. */
function answerBody(contentType: string | null, body: Buffer): unknown {
  const text = body.toString('utf8');
  if (contentType && /^application\/([\w.+-]*\+)?json\b/i.test(contentType)) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

/**
 * What the caller sees of a request, through GET and in the callback's body (which leaves out
 * the callback's own state). The callback URL is not shown: it may carry the receiver's token.
 */
export function agentRequestView(row: AgentRequestRow, workspace: string, options: { withCallback?: boolean } = {}) {
  return {
    id: row.id,
    workspace,
    agent: row.agent_name,
    status: row.status,
    createdAt: row.created_at.toISOString(),
    startedAt: iso(row.started_at),
    completedAt: iso(row.completed_at),
    result:
      row.response_status === null
        ? null
        : { statusCode: row.response_status, contentType: row.response_content_type, body: answerBody(row.response_content_type, row.response_body ?? Buffer.alloc(0)) },
    error: row.error,
    ...(options.withCallback === false
      ? {}
      : { callback: row.callback_status === null ? null : { status: row.callback_status, error: row.callback_error, at: iso(row.callback_at) } }),
  };
}
