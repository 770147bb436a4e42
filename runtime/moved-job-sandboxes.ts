import type { Pool } from 'pg';
import { jobSandboxId } from '../domain/jobs/execution';
import { jobSandboxesMovedAway } from '../store/job-records';
import type { SandboxRuntime } from './sandbox-runtime';

const JOB_SANDBOX = /^job-([0-9a-f-]{36})$/;

/**
 * Removes this node's job sandboxes whose execution moved to another node while this one was
 * lost, ended, or is gone: a node coming back must not run tasks that run elsewhere now (the
 * node worker does this before it takes work). Answers the execution row ids whose sandbox it removed.
 */
export async function removeMovedJobSandboxes(runtime: Pick<SandboxRuntime, 'list' | 'remove'>, pg: Pool, nodeId: string): Promise<string[]> {
  const executions = (await runtime.list()).map((sandbox) => JOB_SANDBOX.exec(sandbox.id)?.[1]).filter((id): id is string => id !== undefined);
  const movedAway = await jobSandboxesMovedAway(pg, nodeId, executions);
  for (const id of movedAway) await runtime.remove(jobSandboxId(id));
  return movedAway;
}
