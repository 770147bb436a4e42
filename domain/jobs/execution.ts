import type { SandboxNetworkSpec } from '../sandbox/network-policy';
import type { UsageTick } from '../billing/metering';
import { UNRECORDED_IMAGE } from '../images/builtin';

export type ExecutionStatus = 'queued' | 'pending' | 'running' | 'cancelling' | 'cancelled' | 'failed' | 'succeeded' | 'timeout';
export type TaskStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export const TERMINAL_EXECUTION_STATUSES: ExecutionStatus[] = ['cancelled', 'failed', 'succeeded', 'timeout'];
export const TERMINAL_TASK_STATUSES: TaskStatus[] = ['succeeded', 'failed', 'cancelled'];

/** Bounds on one execution: a workflow's history grows with every task. */
export const MAX_TASKS = 10_000;
const MAX_ARGUMENTS_BYTES = 64 * 1024;

export const DEFAULT_JOB_MEMORY_MB = 1024;
export const DEFAULT_MAX_CONCURRENT_TASKS = 10;
export const DEFAULT_TASK_TIMEOUT_SECONDS = 3600;
export const MAX_TASK_TIMEOUT_SECONDS = 24 * 3600;
export const MAX_CONCURRENT_TASKS = 1_000;
export const MAX_TASK_RETRIES = 100;

/** The job's runtime settings an execution runs with (its spec.runtime, overridden per execution). */
export interface JobRuntimeSettings {
  image: string;
  /** The integration connection (`oci-registry`) whose account pulls `image` from its registry, if it is private. */
  registryConnection?: string;
  /** argv of the task process, run from /app. */
  command: string[];
  memoryMb: number;
  envs: Record<string, string>;
  maxConcurrentTasks: number;
  maxRetries: number;
  timeoutSeconds: number;
  /** The execution sandbox's outbound network: the job's `spec.network` when the execution started (none: loopback only). */
  network?: SandboxNetworkSpec;
}

/** What identifies one execution everywhere (rows, workflow, sandbox, meters). */
export interface ExecutionKey {
  /** Row id (uuid) of the execution. */
  id: string;
  /** The id the client sees (given in the request, or generated). */
  executionId: string;
  accountId: string;
  workspace: string;
  workspaceId: string;
  jobId: string;
  jobName: string;
}

export interface JobExecutionRequest {
  tasks: Record<string, unknown>[];
  env?: Record<string, string>;
  memory?: number;
  id?: string;
}

/** Why a request body is not acceptable; the message names the field. */
export class ExecutionRequestError extends Error {
  override name = 'ExecutionRequestError';
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const EXECUTION_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

export function parseExecutionRequest(body: unknown): JobExecutionRequest {
  if (!isPlainObject(body)) throw new ExecutionRequestError('body must be a JSON object');
  const { tasks, env, memory, id } = body;
  if (!Array.isArray(tasks)) throw new ExecutionRequestError('body.tasks must be an array of objects');
  if (tasks.length === 0) throw new ExecutionRequestError('body.tasks must hold at least one task');
  if (tasks.length > MAX_TASKS) throw new ExecutionRequestError(`body.tasks must hold at most ${MAX_TASKS} tasks`);
  tasks.forEach((task, i) => {
    if (!isPlainObject(task)) throw new ExecutionRequestError(`body.tasks[${i}] must be an object`);
    if (JSON.stringify(task).length > MAX_ARGUMENTS_BYTES) {
      throw new ExecutionRequestError(`body.tasks[${i}] must be at most ${MAX_ARGUMENTS_BYTES} bytes of JSON`);
    }
  });
  const request: JobExecutionRequest = { tasks: tasks as Record<string, unknown>[] };
  if (env !== undefined && env !== null) {
    if (!isPlainObject(env)) throw new ExecutionRequestError('body.env must be an object of strings');
    for (const [key, value] of Object.entries(env)) {
      if (!ENV_NAME.test(key)) throw new ExecutionRequestError(`body.env: '${key}' is not a valid variable name`);
      if (typeof value !== 'string') throw new ExecutionRequestError(`body.env.${key} must be a string`);
    }
    request.env = env as Record<string, string>;
  }
  if (memory !== undefined && memory !== null) {
    if (typeof memory !== 'number' || !Number.isInteger(memory) || memory < 64 || memory > 65_536) {
      throw new ExecutionRequestError('body.memory must be an integer number of MB from 64 to 65536');
    }
    request.memory = memory;
  }
  if (id !== undefined && id !== null) {
    if (typeof id !== 'string' || !EXECUTION_ID.test(id)) {
      throw new ExecutionRequestError("body.id must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit");
    }
    request.id = id;
  }
  return request;
}

const positiveInteger = (value: unknown, fallback: number, max: number) =>
  typeof value === 'number' && Number.isInteger(value) && value > 0 ? Math.min(value, max) : fallback;

/** The settings an execution runs with: the job's spec.runtime, then the request's overrides. */
export function jobRuntimeSettings(runtime: Record<string, unknown> | undefined, request: Pick<JobExecutionRequest, 'env' | 'memory'>): JobRuntimeSettings {
  const r = runtime ?? {};
  const envs: Record<string, string> = {};
  if (Array.isArray(r.envs)) {
    for (const entry of r.envs as { name?: unknown; value?: unknown }[]) {
      if (typeof entry?.name === 'string' && typeof entry.value === 'string') envs[entry.name] = entry.value;
    }
  }
  const command = Array.isArray(r.command) && r.command.length > 0 && r.command.every((c) => typeof c === 'string') ? (r.command as string[]) : ['node', 'task.js'];
  const maxRetries = typeof r.maxRetries === 'number' && Number.isInteger(r.maxRetries) && r.maxRetries >= 0 ? Math.min(r.maxRetries, MAX_TASK_RETRIES) : 0;
  return {
    image: typeof r.image === 'string' && r.image ? r.image : UNRECORDED_IMAGE,
    ...(typeof r.registryConnection === 'string' && r.registryConnection ? { registryConnection: r.registryConnection } : {}),
    command,
    memoryMb: request.memory ?? positiveInteger(r.memory, DEFAULT_JOB_MEMORY_MB, 65_536),
    envs: { ...envs, ...request.env },
    maxConcurrentTasks: positiveInteger(r.maxConcurrentTasks, DEFAULT_MAX_CONCURRENT_TASKS, MAX_CONCURRENT_TASKS),
    maxRetries,
    timeoutSeconds: positiveInteger(r.timeout, DEFAULT_TASK_TIMEOUT_SECONDS, MAX_TASK_TIMEOUT_SECONDS),
  };
}

/**
 * The environment of one task process: the job's variables, its index, its arguments as JSON,
 * and for convenience each top-level argument under its upper-cased name (strings as they are,
 * other values as JSON). Index and arguments win over same-named argument keys.
 */
export function taskEnvironment(settings: Pick<JobRuntimeSettings, 'envs'>, index: number, args: Record<string, unknown>): Record<string, string> {
  const env: Record<string, string> = { ...settings.envs };
  for (const [key, value] of Object.entries(args)) {
    const name = key.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
    if (!ENV_NAME.test(name) || value === undefined) continue;
    env[name] = typeof value === 'string' ? value : JSON.stringify(value);
  }
  env.TASK_INDEX = String(index);
  env.TASK_ARGUMENTS = JSON.stringify(args);
  return env;
}

export const jobExecutionWorkflowId = (workspace: string, job: string, executionId: string) => `job/${workspace}/${job}/${executionId}`;

/** The node-local sandbox that runs the tasks of one execution. */
export const jobSandboxId = (executionRowId: string) => `job-${executionRowId}`;

/** The execution row id of a runtime id jobSandboxId made; undefined for any other id. */
export function executionOfSandboxId(sandboxId: string): string | undefined {
  return /^job-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/.exec(sandboxId)?.[1];
}

/** The agent's process name of one attempt of one task; a restarted activity finds it again. */
export const taskProcessName = (index: number, attempt: number) => `task-${index}-a${attempt}`;

/** A chunk holds at most this many tasks: a retried chunk re-checks its finished ones cheaply. */
export const MAX_TASK_CHUNK = 25;

/**
 * The tasks of an execution in the chunks its lanes take one at a time: about four chunks per
 * lane, so lanes finish together, and never more than MAX_TASK_CHUNK tasks in one.
 */
export function taskChunks(taskCount: number, lanes: number): number[][] {
  const size = Math.max(1, Math.min(MAX_TASK_CHUNK, Math.ceil(taskCount / (Math.max(1, lanes) * 4))));
  const chunks: number[][] = [];
  for (let start = 0; start < taskCount; start += size) chunks.push(Array.from({ length: Math.min(size, taskCount - start) }, (_, i) => start + i));
  return chunks;
}

export interface TaskOutcome {
  index: number;
  status: TaskStatus;
  /** Attempts beyond the first. */
  retries: number;
  /** Why the last attempt ended: 'exit', 'timeout', 'cancelled' or 'error'. */
  reason: 'exit' | 'timeout' | 'cancelled' | 'error';
  /** Task seconds across attempts, for metering. */
  seconds: number;
}

export interface ExecutionStats {
  total: number;
  success: number;
  failure: number;
  running: number;
  retried: number;
  cancelled: number;
}

/**
 * The final status of an execution from its tasks: succeeded when all did; timeout when every
 * failed task ran out of time; failed otherwise.
 */
export function finalExecutionStatus(outcomes: Pick<TaskOutcome, 'status' | 'reason'>[]): ExecutionStatus {
  const failed = outcomes.filter((o) => o.status !== 'succeeded');
  if (failed.length === 0) return 'succeeded';
  if (failed.every((o) => o.status === 'cancelled')) return 'cancelled';
  return failed.every((o) => o.reason === 'timeout') ? 'timeout' : 'failed';
}

/**
 * Job compute of one execution, memory GB x task seconds, as one tick per execution: its id is
 * derived from the execution row and its start, so recording it again is a no-op.
 */
export function jobUsageTick(key: ExecutionKey, memoryMb: number, taskSeconds: number, startedAt: number): UsageTick | undefined {
  const quantity = Math.round((memoryMb / 1024) * taskSeconds * 1e6) / 1e6;
  if (quantity <= 0) return undefined;
  return {
    accountId: key.accountId,
    workspace: key.workspace,
    resourceType: 'job',
    resourceName: key.jobName,
    resourceUuid: key.id,
    billingDimension: 'job_compute_runtime_gbs',
    quantity,
    periodStart: new Date(startedAt),
  };
}
