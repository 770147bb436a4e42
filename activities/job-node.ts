import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import type { Pool } from 'pg';
import {
  TERMINAL_TASK_STATUSES,
  jobSandboxId,
  taskEnvironment,
  taskProcessName,
  type ExecutionKey,
  type JobRuntimeSettings,
  type TaskOutcome,
} from '../domain/jobs/execution';
import { workloadNetwork } from '../domain/workloads/network';
import { shellLine } from '../domain/workloads/workload';
import { SandboxSpecError, type RuntimeVolumeMount, type SandboxRuntime } from '../runtime/sandbox-runtime';
import { AgentError, SandboxAgentClient } from '../runtime/agent-client';
import type { ProcessRecord } from '../sandbox-agent/contract/process';
import { claimTask, recordAttempt, startRetry } from '../store/job-records';

/** Where the job's code is bound inside its sandbox, and the tasks' working folder. */
export const JOB_CODE_MOUNT = '/app';
const HEARTBEAT_MS = 1_000;
/** Poll interval while re-attaching to a task process started by an earlier activity run. */
const REATTACH_POLL_MS = 100;
const OUTPUT_TAIL_CHARS = 2_000;

export interface JobNodeDeps {
  runtime: SandboxRuntime;
  pg: Pool;
  /** Extra folders bound into every job sandbox (a node's shared scratch space; tests use one). */
  volumes?: RuntimeVolumeMount[];
}

export interface RunTaskInput {
  key: ExecutionKey;
  index: number;
  settings: JobRuntimeSettings;
}

export interface RunTasksInput {
  key: ExecutionKey;
  /** Task indices, run one after the other. */
  indices: number[];
  settings: JobRuntimeSettings;
}

type AttemptEnd = { kind: 'succeeded' | 'failed' | 'timeout'; record: ProcessRecord } | { kind: 'cancelled' };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const tail = (text: string) => (text.length > OUTPUT_TAIL_CHARS ? text.slice(-OUTPUT_TAIL_CHARS) : text);

function attemptSeconds(record: ProcessRecord): number {
  const end = record.completedAt ? Date.parse(record.completedAt) : Date.now();
  return Math.max(0, (end - Date.parse(record.startedAt)) / 1000);
}

/** Waits for a task process started by an earlier run of the activity to end. */
async function awaitProcess(agent: SandboxAgentClient, name: string, signal: AbortSignal): Promise<ProcessRecord> {
  for (;;) {
    const record = await agent.findProcess(name, { signal });
    if (!record) throw new Error(`the sandbox lost process ${name}`);
    if (record.status !== 'running') return record;
    await sleep(REATTACH_POLL_MS);
  }
}

/** Starts the attempt's process and waits for its end, or re-attaches to it when a retried activity finds it started. */
async function attemptProcess(agent: SandboxAgentClient, input: RunTaskInput, name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ProcessRecord> {
  // Only a retried activity can find its process already started: a first run saves the round trip.
  const existing = Context.current().info.attempt > 1 ? await agent.findProcess(name, { signal }) : undefined;
  if (existing) return existing.status === 'running' ? awaitProcess(agent, name, signal) : existing;
  const request = {
    command: shellLine(input.settings.command),
    name,
    env: taskEnvironment(input.settings, input.index, args),
    workingDir: JOB_CODE_MOUNT,
    waitForCompletion: true,
    timeout: input.settings.timeoutSeconds,
  };
  return agent.startProcess(request, { signal }).catch((err: Error) => {
    if (err instanceof AgentError) throw new Error(`the sandbox refused task ${input.index}: ${err.reason}`);
    throw err;
  });
}

/** Runs (or re-attaches to) one attempt; on cancellation kills its process. */
async function runAttempt(agent: SandboxAgentClient, input: RunTaskInput, attempt: number, args: Record<string, unknown>): Promise<AttemptEnd> {
  const context = Context.current();
  const name = taskProcessName(input.index, attempt);
  const abort = new AbortController();
  // Only a cancelled execution kills the process. On a worker shutdown or a lost heartbeat the
  // process keeps running in the sandbox, and the retried activity re-attaches to it by name.
  let requested = false;
  context.cancelled.catch((err: Error) => {
    requested = err.message === 'CANCELLED' || context.cancellationDetails?.cancelRequested === true;
    abort.abort();
  });
  const beat = setInterval(() => context.heartbeat({ attempt }), HEARTBEAT_MS);
  try {
    const record = await attemptProcess(agent, input, name, args, abort.signal);
    if (record.status === 'completed' && record.exitCode === 0) return { kind: 'succeeded', record };
    return { kind: record.status === 'killed' ? 'timeout' : 'failed', record };
  } catch (err) {
    if (abort.signal.aborted && requested) {
      await agent.killProcess(name).catch(() => undefined);
      return { kind: 'cancelled' };
    }
    if (abort.signal.aborted) throw ApplicationFailure.retryable('the task activity was interrupted; its process keeps running', 'Interrupted');
    throw err;
  } finally {
    clearInterval(beat);
  }
}

/** What an attempt that ran to its end (not cancelled) records, and whether the task ends with it. */
function attemptCondition(end: Exclude<AttemptEnd, { kind: 'cancelled' }>, attempt: number, settings: JobRuntimeSettings, now: string) {
  if (end.kind === 'succeeded') {
    return { type: 'Succeeded', status: 'True' as const, reason: 'Exited', message: `attempt ${attempt + 1} exited with code 0`, lastTransitionTime: now };
  }
  const message =
    end.kind === 'timeout'
      ? `attempt ${attempt + 1} ran out of its ${settings.timeoutSeconds} s and was killed`
      : `attempt ${attempt + 1} exited with code ${end.record.exitCode}${end.record.stderr ? `: ${tail(end.record.stderr)}` : ''}`;
  return { type: 'Failed', status: 'True' as const, reason: end.kind === 'timeout' ? 'Timeout' : 'NonZeroExit', message, lastTransitionTime: now };
}

/** Runs one task to its end across its retries; returns what its row records. */
async function runTask(pg: Pool, agent: SandboxAgentClient, input: RunTaskInput): Promise<TaskOutcome> {
  const { key, index, settings } = input;
  const record = await claimTask(pg, key.id, index);
  if (!record) throw ApplicationFailure.nonRetryable(`task ${index} of execution ${key.executionId} has no row`, 'MissingTask');
  if (TERMINAL_TASK_STATUSES.includes(record.status)) {
    return { index, status: record.status, retries: record.retries, reason: record.reason ?? 'exit', seconds: record.seconds };
  }
  let seconds = record.seconds;
  for (let attempt = record.attempt; ; attempt++) {
    if (attempt > record.attempt) await startRetry(pg, key.id, index, attempt);
    const end = await runAttempt(agent, input, attempt, record.arguments);
    const now = new Date().toISOString();
    if (end.kind === 'cancelled') {
      const condition = { type: 'Cancelled', status: 'True' as const, message: 'the execution was cancelled; the process was killed', lastTransitionTime: now };
      await recordAttempt(pg, key.id, index, condition, 0, { status: 'cancelled', reason: 'cancelled' });
      throw new CancelledFailure('task cancelled');
    }
    const used = attemptSeconds(end.record);
    seconds += used;
    const condition = attemptCondition(end, attempt, settings, now);
    if (end.kind === 'succeeded') {
      await recordAttempt(pg, key.id, index, condition, used, { status: 'succeeded', reason: 'exit' });
      return { index, status: 'succeeded', retries: attempt, reason: 'exit', seconds };
    }
    const reason = end.kind === 'timeout' ? 'timeout' : 'exit';
    const last = attempt >= settings.maxRetries;
    await recordAttempt(pg, key.id, index, condition, used, last ? { status: 'failed', reason } : undefined);
    if (last) return { index, status: 'failed', retries: attempt, reason, seconds };
  }
}

/**
 * The node side of job executions: one sandbox per execution holding the job's code read-only,
 * and one activity per task that runs the job's command in it through the agent's process API.
 * Every activity is safe to run again: a task's row says whether it already ended, and an
 * attempt's process is named, so a retried activity waits for the process it had started
 * instead of starting it twice.
 */
export function createJobNodeActivities({ runtime, pg, volumes = [] }: JobNodeDeps) {
  return {
    async startJobSandbox(key: ExecutionKey, settings: JobRuntimeSettings, codeDir: string): Promise<void> {
      try {
        await runtime.start({
          id: jobSandboxId(key.id),
          workspaceId: key.workspaceId,
          name: key.jobName,
          image: settings.image,
          memoryMb: settings.memoryMb,
          envs: [],
          volumes: [{ hostPath: codeDir, mountPath: JOB_CODE_MOUNT, readOnly: true }, ...volumes],
          // Its namespace goes with the sandbox, when the execution ends (removeJobSandbox).
          network: workloadNetwork(settings),
        });
      } catch (err) {
        if (err instanceof SandboxSpecError) throw ApplicationFailure.nonRetryable(err.message, 'SandboxSpecError');
        throw err;
      }
    },

    async removeJobSandbox(key: ExecutionKey): Promise<void> {
      await runtime.remove(jobSandboxId(key.id));
    },

    /**
     * Runs a chunk of tasks, one after the other, each to its end across its retries; answers
     * what their rows record. A chunk rather than a task per activity keeps the execution's
     * history short (a thousand tasks are dozens of activities); a retried chunk skips the
     * tasks its rows say ended and re-attaches to the one that was running.
     */
    async runJobTasks({ key, indices, settings }: RunTasksInput): Promise<TaskOutcome[]> {
      const agent = new SandboxAgentClient(runtime.socketPath(jobSandboxId(key.id)));
      const outcomes: TaskOutcome[] = [];
      for (const index of indices) outcomes.push(await runTask(pg, agent, { key, index, settings }));
      return outcomes;
    },
  };
}

export type JobNodeActivities = ReturnType<typeof createJobNodeActivities>;
