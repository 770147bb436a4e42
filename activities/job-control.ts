import { jobUsageTick, type ExecutionKey, type ExecutionStatus } from '../domain/jobs/execution';
import type { ActivityDeps } from './support/activity-deps';
import { cancelUnfinishedTasks, executionTaskSeconds, setExecutionStatus } from '../store/job-records';
import { recordUsage } from './usage-metering';

export interface FinishExecutionInput {
  key: ExecutionKey;
  status: ExecutionStatus;
  memoryMb: number;
  /** Start of the execution (the meter's period start). */
  startedAt: number;
}

/** The control-plane side of job executions: their rows and their metering. */
export function createJobControlActivities({ pg }: Pick<ActivityDeps, 'pg'>) {
  return {
    async markJobExecution(executionRowId: string, status: ExecutionStatus): Promise<void> {
      await setExecutionStatus(pg, executionRowId, status);
    },

    /**
     * Ends an execution: tasks that never ended are cancelled, the final status is written and
     * the execution's compute (memory GB x task seconds) is metered under an id derived from it.
     */
    async finishJobExecution(input: FinishExecutionInput): Promise<void> {
      await cancelUnfinishedTasks(pg, input.key.id);
      await setExecutionStatus(pg, input.key.id, input.status);
      const tick = jobUsageTick(input.key, input.memoryMb, await executionTaskSeconds(pg, input.key.id), input.startedAt);
      if (tick) await recordUsage(pg, tick);
    },
  };
}

export type JobControlActivities = ReturnType<typeof createJobControlActivities>;
