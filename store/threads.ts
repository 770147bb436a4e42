import type { Pool } from 'pg';

/** One turn of a conversation as an agent stores and reads it. */
export interface ThreadMessage {
  role: string;
  content: string;
}

export const THREAD_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
export const MAX_ROLE_LENGTH = 32;
export const MAX_CONTENT_BYTES = 256 * 1024;
export const MAX_MESSAGES_PER_APPEND = 100;
export const DEFAULT_READ_LIMIT = 100;
export const MAX_READ_LIMIT = 1000;

/** What is wrong with messages an agent wants to append, naming the field; undefined when fine. */
export function messagesProblem(body: unknown): string | undefined {
  const messages = (body as { messages?: unknown } | null)?.messages;
  if (!Array.isArray(messages) || messages.length === 0) return 'messages must be a non-empty array of {role, content}';
  if (messages.length > MAX_MESSAGES_PER_APPEND) return `messages holds at most ${MAX_MESSAGES_PER_APPEND} entries per request`;
  for (const [i, message] of messages.entries()) {
    const { role, content } = (message ?? {}) as Partial<ThreadMessage>;
    if (typeof role !== 'string' || role.length === 0 || role.length > MAX_ROLE_LENGTH) return `messages[${i}].role must be a string of 1-${MAX_ROLE_LENGTH} characters`;
    if (typeof content !== 'string') return `messages[${i}].content must be a string`;
    if (Buffer.byteLength(content) > MAX_CONTENT_BYTES) return `messages[${i}].content is larger than ${MAX_CONTENT_BYTES} bytes`;
    // PostgreSQL text cannot hold NUL.
    if (content.includes('\0') || role.includes('\0')) return `messages[${i}] contains a NUL character`;
  }
  return undefined;
}

/**
 * Conversation memory of agents in PostgreSQL, per agent and thread. Callers are the platform
 * socket of one agent's sandbox, so an agent only ever names its own threads.
 */
export class ThreadStore {
  constructor(private readonly pg: Pool) {}

  /** The latest `limit` turns of a thread, oldest first. */
  async read(agentId: string, threadId: string, limit: number): Promise<(ThreadMessage & { createdAt: string })[]> {
    const { rows } = await this.pg.query<{ role: string; content: string; created_at: Date }>(
      {
        name: 'thread-store-read',
        text: `SELECT role, content, created_at FROM (
                 SELECT seq, role, content, created_at FROM agent_thread_messages
                  WHERE agent_id = $1 AND thread_id = $2 ORDER BY seq DESC LIMIT $3
               ) latest ORDER BY seq`,
      },
      [agentId, threadId, limit],
    );
    return rows.map((row) => ({ role: row.role, content: row.content, createdAt: row.created_at.toISOString() }));
  }

  /** Appends turns in their order, in one statement (all or none). */
  async append(agentId: string, threadId: string, messages: ThreadMessage[]): Promise<number> {
    const { rowCount } = await this.pg.query(
      {
        name: 'thread-store-append',
        text: `INSERT INTO agent_thread_messages (agent_id, thread_id, role, content)
               SELECT $1, $2, m.role, m.content FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS m(role, content, n) ORDER BY m.n`,
      },
      [agentId, threadId, messages.map((m) => m.role), messages.map((m) => m.content)],
    );
    return rowCount ?? 0;
  }

  async forget(agentId: string, threadId: string): Promise<number> {
    const { rowCount } = await this.pg.query({ name: 'thread-store-forget', text: 'DELETE FROM agent_thread_messages WHERE agent_id = $1 AND thread_id = $2' }, [agentId, threadId]);
    return rowCount ?? 0;
  }
}
