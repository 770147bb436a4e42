import {
  ActivityCancellationType,
  CancellationScope,
  isCancellation,
  proxyActivities,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { JobControlActivities } from '../activities/job-control';
import type { JobNodeActivities } from '../activities/job-node';
import { finalExecutionStatus, taskChunks, type ExecutionKey, type ExecutionStatus, type JobRuntimeSettings, type TaskOutcome } from '../domain/jobs/execution';

export interface JobExecutionInput {
  key: ExecutionKey;
  settings: JobRuntimeSettings;
  taskCount: number;
  /** The job's code on the node, bound read-only at /app. */
  codeDir: string;
  nodeQueue: string;
  /** When the execution was created (epoch ms): the start of its meter's period. */
  createdAt: number;
}

export interface JobExecutionResult {
  status: ExecutionStatus;
  message?: string;
}

/**
 * One job execution, `job/<workspace>/<job>/<executionId>`: a sandbox for its tasks, then the
 * tasks with at most maxConcurrentTasks in flight: that many lanes, each taking the next chunk
 * of tasks and running it as one activity on the node (each task to its end, retries and
 * timeout included), then the sandbox's removal, the final status and the meter. A chunk whose
 * activity completed is in this history and never runs again; one in flight when a worker died
 * is run again by its activity, which skips the tasks its rows say ended and re-attaches to the
 * one running. Cancelling the workflow cancels the running activities, which kill their processes.
 */
export async function jobExecution(input: JobExecutionInput): Promise<JobExecutionResult> {
  const { key, settings } = input;
  upsertSearchAttributes({ HangarWorkspace: [key.workspace], HangarResourceKind: ['job'], HangarResourceName: [key.jobName] });
  const control = proxyActivities<JobControlActivities>({
    startToCloseTimeout: '30s',
    retry: { initialInterval: '200ms', maximumInterval: '10s' },
  });
  const node = proxyActivities<JobNodeActivities>({
    taskQueue: input.nodeQueue,
    startToCloseTimeout: '60s',
    retry: { initialInterval: '200ms', maximumInterval: '5s', maximumAttempts: 10 },
  });
  const lanes = Math.min(settings.maxConcurrentTasks, input.taskCount);
  const chunks = taskChunks(input.taskCount, lanes);
  const tasks = proxyActivities<JobNodeActivities>({
    taskQueue: input.nodeQueue,
    // Every attempt of every task of a chunk may use its whole timeout; the margin covers the agent's round trips.
    startToCloseTimeout: `${(settings.timeoutSeconds * (settings.maxRetries + 1) + 60) * (chunks[0]?.length ?? 1)}s`,
    // A dead worker is noticed by the missing heartbeat; the retry resumes from the task's row.
    heartbeatTimeout: '5s',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '200ms', maximumInterval: '5s', maximumAttempts: 20 },
  });

  const outcomes: TaskOutcome[] = [];
  let status: ExecutionStatus = 'failed';
  let message: string | undefined;
  try {
    await control.markJobExecution(key.id, 'pending');
    await node.startJobSandbox(key, settings, input.codeDir);
    await control.markJobExecution(key.id, 'running');
    let next = 0;
    const lane = async () => {
      while (next < chunks.length) {
        const indices = chunks[next++];
        for (const outcome of await tasks.runJobTasks({ key, indices, settings })) outcomes[outcome.index] = outcome;
      }
    };
    await Promise.all(Array.from({ length: lanes }, lane));
    status = finalExecutionStatus(outcomes);
  } catch (err) {
    if (isCancellation(err)) status = 'cancelled';
    else message = (err as Error).message;
  }
  await CancellationScope.nonCancellable(async () => {
    await node.removeJobSandbox(key);
    await control.finishJobExecution({ key, status, memoryMb: settings.memoryMb, startedAt: input.createdAt });
  });
  return { status, message };
}
