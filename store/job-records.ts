import type { Pool } from 'pg';
import { TERMINAL_EXECUTION_STATUSES, type ExecutionStatus, type TaskOutcome, type TaskStatus } from '../domain/jobs/execution';

/** A task's durable record, as the activities and the API read it. */
export interface TaskRecord {
  index: number;
  status: TaskStatus;
  retries: number;
  attempt: number;
  reason: TaskOutcome['reason'] | null;
  seconds: number;
  arguments: Record<string, unknown>;
}

export interface TaskCondition {
  type: string;
  status: 'True' | 'False';
  reason?: string;
  message: string;
  lastTransitionTime: string;
}

const TASK_COLUMNS = 'index, status, retries, attempt, reason, seconds, arguments';

/**
 * Claims a task for running: a pending or running task becomes running and is returned; a task
 * that already ended is returned as it is (the caller reports its recorded result).
 */
export async function claimTask(pg: Pool, executionRowId: string, index: number): Promise<TaskRecord | undefined> {
  const claimed = await pg.query<TaskRecord>(
    `UPDATE job_tasks SET status = 'running', started_at = COALESCE(started_at, now())
      WHERE execution_id = $1 AND index = $2 AND status IN ('pending', 'running') RETURNING ${TASK_COLUMNS}`,
    [executionRowId, index],
  );
  if (claimed.rows[0]) return claimed.rows[0];
  const { rows } = await pg.query<TaskRecord>(`SELECT ${TASK_COLUMNS} FROM job_tasks WHERE execution_id = $1 AND index = $2`, [executionRowId, index]);
  return rows[0];
}

/** Notes that a retry begins. */
export async function startRetry(pg: Pool, executionRowId: string, index: number, attempt: number): Promise<void> {
  await pg.query(
    `UPDATE job_tasks SET attempt = $3, retries = $3 WHERE execution_id = $1 AND index = $2 AND status = 'running'`,
    [executionRowId, index, attempt],
  );
}

/**
 * Records how an attempt ended, in one statement: its condition and task seconds, and when it is
 * the task's last, the task's end. A task that already ended keeps its status (the first end wins).
 */
export async function recordAttempt(
  pg: Pool,
  executionRowId: string,
  index: number,
  condition: TaskCondition,
  seconds: number,
  end?: Pick<TaskOutcome, 'status' | 'reason'>,
): Promise<void> {
  await pg.query(
    `UPDATE job_tasks
        SET conditions = conditions || jsonb_build_array($3::jsonb),
            seconds = seconds + $4,
            status = CASE WHEN $5::text IS NOT NULL AND status IN ('pending', 'running') THEN $5 ELSE status END,
            reason = CASE WHEN $5::text IS NOT NULL AND status IN ('pending', 'running') THEN $6 ELSE reason END,
            completed_at = CASE WHEN $5::text IS NOT NULL AND status IN ('pending', 'running') THEN now() ELSE completed_at END
      WHERE execution_id = $1 AND index = $2`,
    [executionRowId, index, JSON.stringify(condition), seconds, end?.status ?? null, end?.reason ?? null],
  );
}

/** Moves an execution on; a requested cancellation is only replaced by the final status. */
export async function setExecutionStatus(pg: Pool, executionRowId: string, status: ExecutionStatus): Promise<void> {
  const terminal = TERMINAL_EXECUTION_STATUSES.includes(status);
  await pg.query(
    `UPDATE job_executions
        SET status = $2,
            started_at = CASE WHEN $2 = 'running' THEN COALESCE(started_at, now()) ELSE started_at END,
            completed_at = CASE WHEN $3 THEN COALESCE(completed_at, now()) ELSE completed_at END
      WHERE id = $1 AND completed_at IS NULL AND (status <> 'cancelling' OR $3)`,
    [executionRowId, status, terminal],
  );
}

/** Every task that has not ended becomes cancelled (their processes are gone with the sandbox). */
export async function cancelUnfinishedTasks(pg: Pool, executionRowId: string): Promise<void> {
  await pg.query(
    `UPDATE job_tasks SET status = 'cancelled', reason = 'cancelled', completed_at = now(),
            conditions = conditions || jsonb_build_array(jsonb_build_object('type', 'Cancelled', 'status', 'True',
              'message', 'the execution was cancelled', 'lastTransitionTime', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))
      WHERE execution_id = $1 AND status IN ('pending', 'running')`,
    [executionRowId],
  );
}

/** Task seconds of the whole execution, for metering. */
export async function executionTaskSeconds(pg: Pool, executionRowId: string): Promise<number> {
  const { rows } = await pg.query<{ seconds: number | null }>('SELECT sum(seconds) AS seconds FROM job_tasks WHERE execution_id = $1', [executionRowId]);
  return Number(rows[0]?.seconds ?? 0);
}

/** The node an execution was placed on (undefined: not placed yet, or started before placement). */
export async function executionNode(pg: Pool, executionRowId: string): Promise<string | undefined> {
  const { rows } = await pg.query<{ node_id: string | null }>('SELECT node_id FROM job_executions WHERE id = $1', [executionRowId]);
  return rows[0]?.node_id ?? undefined;
}

/** Places an execution on `nodeId` unless it is placed already; answers where it is. */
export async function placeExecutionNode(pg: Pool, executionRowId: string, nodeId: string): Promise<string> {
  await pg.query('UPDATE job_executions SET node_id = $2 WHERE id = $1 AND node_id IS NULL', [executionRowId, nodeId]);
  const placed = await executionNode(pg, executionRowId);
  if (!placed) throw new Error(`execution ${executionRowId} has no row`);
  return placed;
}

/** Moves an execution from `fromNodeId` to `toNodeId`, unless it already moved elsewhere; answers where it is. */
export async function moveExecutionNode(pg: Pool, executionRowId: string, fromNodeId: string, toNodeId: string): Promise<string> {
  await pg.query('UPDATE job_executions SET node_id = $3 WHERE id = $1 AND node_id = $2', [executionRowId, fromNodeId, toNodeId]);
  const placed = await executionNode(pg, executionRowId);
  if (!placed) throw new Error(`execution ${executionRowId} has no row`);
  return placed;
}

/** Job sandboxes a node may remove: their execution ended, is gone, or runs on another node now. */
export async function jobSandboxesMovedAway(pg: Pool, nodeId: string, executionRowIds: string[]): Promise<string[]> {
  if (executionRowIds.length === 0) return [];
  const { rows } = await pg.query<{ id: string }>(
    `SELECT wanted.id FROM unnest($1::uuid[]) AS wanted(id) LEFT JOIN job_executions e ON e.id = wanted.id
      WHERE e.id IS NULL OR e.completed_at IS NOT NULL OR (e.node_id IS NOT NULL AND e.node_id <> $2)`,
    [executionRowIds, nodeId],
  );
  return rows.map((row) => row.id);
}
