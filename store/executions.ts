import type { Pool } from 'pg';
import type { ExecutionStats, ExecutionStatus, JobRuntimeSettings, TaskStatus } from '../domain/jobs/execution';
import type { TaskCondition } from './job-records';
import { inTransaction } from './transaction';

export interface ExecutionRow {
  id: string;
  workspace_id: string;
  job_id: string;
  job_name: string;
  execution_id: string;
  status: ExecutionStatus;
  settings: JobRuntimeSettings;
  task_count: number;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  stats: ExecutionStats;
}

interface TaskRow {
  index: number;
  arguments: Record<string, unknown>;
  status: TaskStatus;
  retries: number;
  conditions: TaskCondition[];
  started_at: Date | null;
  completed_at: Date | null;
}

const iso = (date: Date | null) => (date ? date.toISOString() : null);

const RETURNED_COLUMNS = 'id, workspace_id, job_id, job_name, execution_id, status, settings, task_count, created_at, started_at, completed_at';

// An execution with its stats, counted from its task rows in the same query.
const SELECT_EXECUTION = `
  SELECT e.id, e.workspace_id, e.job_id, e.job_name, e.execution_id, e.status, e.settings, e.task_count,
         e.created_at, e.started_at, e.completed_at,
         json_build_object(
           'total', count(t.index),
           'success', count(t.index) FILTER (WHERE t.status = 'succeeded'),
           'failure', count(t.index) FILTER (WHERE t.status = 'failed'),
           'running', count(t.index) FILTER (WHERE t.status = 'running'),
           'retried', count(t.index) FILTER (WHERE t.retries > 0),
           'cancelled', count(t.index) FILTER (WHERE t.status = 'cancelled')) AS stats
    FROM job_executions e LEFT JOIN job_tasks t ON t.execution_id = e.id`;

/** Executions and their tasks in PostgreSQL, as the API reads and writes them. */
export class ExecutionStore {
  constructor(private readonly pg: Pool) {}

  /** Inserts the execution (status queued) and its task rows; undefined when the id is taken. */
  async create(input: {
    id: string;
    workspaceId: string;
    jobId: string;
    jobName: string;
    executionId: string;
    settings: JobRuntimeSettings;
    codeDir: string;
    tasks: Record<string, unknown>[];
    actor: string;
  }): Promise<ExecutionRow | undefined> {
    return inTransaction(this.pg, async (client) => {
      const { rows } = await client.query<ExecutionRow>(
        `INSERT INTO job_executions (id, workspace_id, job_id, job_name, execution_id, status, settings, code_dir, task_count, created_by)
         VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, $8, $9)
         ON CONFLICT (job_id, execution_id) DO NOTHING RETURNING ${RETURNED_COLUMNS}`,
        [input.id, input.workspaceId, input.jobId, input.jobName, input.executionId, JSON.stringify(input.settings), input.codeDir, input.tasks.length, input.actor],
      );
      // Already there: the insert did nothing, and committing nothing is the same as rolling back.
      if (!rows[0]) return undefined;
      await client.query(
        `INSERT INTO job_tasks (execution_id, index, arguments)
         SELECT $1, (t.ord - 1)::int, t.value FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS t(value, ord)`,
        [input.id, JSON.stringify(input.tasks)],
      );
      const total = input.tasks.length;
      return { ...rows[0], stats: { total, success: 0, failure: 0, running: 0, retried: 0, cancelled: 0 } };
    });
  }

  /** The job and the client's id of the execution whose row id is `id` (its sandbox is named by it); undefined when there is none. */
  async owner(id: string): Promise<{ jobId: string; executionId: string } | undefined> {
    const { rows } = await this.pg.query<{ job_id: string; execution_id: string }>('SELECT job_id, execution_id FROM job_executions WHERE id = $1', [id]);
    return rows[0] && { jobId: rows[0].job_id, executionId: rows[0].execution_id };
  }

  async delete(id: string): Promise<void> {
    await this.pg.query('DELETE FROM job_executions WHERE id = $1', [id]);
  }

  async list(jobId: string, limit: number): Promise<ExecutionRow[]> {
    const { rows } = await this.pg.query<ExecutionRow>(
      `${SELECT_EXECUTION} WHERE e.job_id = $1 GROUP BY e.id ORDER BY e.created_at DESC LIMIT $2`,
      [jobId, limit],
    );
    return rows;
  }

  async get(jobId: string, executionId: string): Promise<ExecutionRow | undefined> {
    const { rows } = await this.pg.query<ExecutionRow>(
      `${SELECT_EXECUTION} WHERE e.job_id = $1 AND e.execution_id = $2 GROUP BY e.id`,
      [jobId, executionId],
    );
    return rows[0];
  }

  /** Moves a running execution to cancelling; false when it already ended. */
  async markCancelling(id: string): Promise<boolean> {
    const { rowCount } = await this.pg.query(
      `UPDATE job_executions SET status = 'cancelling' WHERE id = $1 AND completed_at IS NULL AND status <> 'cancelling'`,
      [id],
    );
    return rowCount === 1;
  }

  async tasks(id: string, settings: JobRuntimeSettings) {
    const { rows } = await this.pg.query<TaskRow>(
      'SELECT index, arguments, status, retries, conditions, started_at, completed_at FROM job_tasks WHERE execution_id = $1 ORDER BY index',
      [id],
    );
    return rows.map((task) => ({
      metadata: { name: `task-${task.index}`, index: task.index, startedAt: iso(task.started_at), completedAt: iso(task.completed_at) },
      spec: { maxRetries: settings.maxRetries, timeout: settings.timeoutSeconds, arguments: task.arguments },
      status: task.status,
      retries: task.retries,
      conditions: task.conditions,
    }));
  }
}

/** The client's view of an execution (without its tasks). */
export function executionView(row: ExecutionRow, workspace: string) {
  return {
    id: row.execution_id,
    executionId: row.execution_id,
    jobId: row.job_id,
    workspaceId: row.workspace_id,
    metadata: {
      name: row.execution_id,
      job: row.job_name,
      workspace,
      createdAt: row.created_at.toISOString(),
      startedAt: iso(row.started_at),
      completedAt: iso(row.completed_at),
    },
    spec: {
      maxConcurrentTasks: row.settings.maxConcurrentTasks,
      maxRetries: row.settings.maxRetries,
      timeout: row.settings.timeoutSeconds,
      memory: row.settings.memoryMb,
    },
    status: row.status,
    stats: row.stats,
  };
}
