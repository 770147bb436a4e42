import { WorkflowExecutionAlreadyStartedError, WorkflowIdConflictPolicy, type Client } from '@temporalio/client';
import type { Pool } from 'pg';
import { nodeTaskQueue, type HangarConfig } from '../../domain/config';
import { ApiError, badRequest, conflict, forbidden, notFound } from '../../domain/errors';
import { newUuid } from '../../domain/ids';
import {
  ExecutionRequestError,
  jobExecutionWorkflowId,
  jobRuntimeSettings,
  parseExecutionRequest,
  type ExecutionKey,
  type JobExecutionRequest,
} from '../../domain/jobs/execution';
import type { Principal, WorkspaceGrant } from '../../domain/principal';
import type { ExecutionRow, ExecutionStore } from '../../store/executions';
import type { ResourceRow, ResourceStore } from '../../store/resources';
import { workspaceNamed } from '../../store/workspaces';
import type { JobExecutionInput, jobExecution } from '../../workflows/job-execution';
import { jobCode, type JobCode } from '../../store/job-code';
import type { WorkloadSpec } from '../../domain/workloads/workload';

/** What job executions work with: jobs (resources), executions, the database, Temporal, the settings. */
export interface ExecutionServices {
  pg: Pool;
  resources: ResourceStore;
  executions: ExecutionStore;
  temporal: Client;
  config: HangarConfig;
}

type Caller = Pick<Principal, 'clientId' | 'accountId' | 'workspaces'>;

/** A job named in a path: `{workspace}/jobs/{job}`. */
export interface JobPath {
  workspace: string;
  job: string;
}

export interface JobOfWorkspace {
  workspace: WorkspaceGrant;
  job: ResourceRow;
}

/** The caller's grant on the workspace in the path: 404 when there is no such workspace, 403 when it is not theirs. */
async function workspaceOf(services: ExecutionServices, caller: Caller, name: string): Promise<WorkspaceGrant> {
  const grant = caller.workspaces.get(name);
  if (grant) return grant;
  if (!(await workspaceNamed(services.pg, name))) throw notFound(`workspace '${name}' not found`);
  throw forbidden(`you are not a member of workspace '${name}'`);
}

export async function jobOf(services: ExecutionServices, caller: Caller, path: JobPath): Promise<JobOfWorkspace> {
  const workspace = await workspaceOf(services, caller, path.workspace);
  const job = await services.resources.get({ workspaceId: workspace.id, kind: 'jobs', name: path.job });
  if (!job) throw notFound(`job '${path.job}' not found in workspace '${workspace.name}'`);
  return { workspace, job };
}

export async function executionOf(services: ExecutionServices, caller: Caller, path: JobPath & { id: string }): Promise<JobOfWorkspace & { execution: ExecutionRow }> {
  const { workspace, job } = await jobOf(services, caller, path);
  const execution = await services.executions.get(job.id, path.id);
  if (!execution) throw notFound(`execution '${path.id}' of job '${job.name}' not found`);
  return { workspace, job, execution };
}

function parsedRequest(body: unknown): JobExecutionRequest {
  try {
    return parseExecutionRequest(body);
  } catch (err) {
    if (err instanceof ExecutionRequestError) throw badRequest(err.message);
    throw err;
  }
}

/** The deployed revision's runtime, under the job's current one (concurrency or retries change without a new upload). */
function runtimeOf(code: JobCode, job: ResourceRow): Record<string, unknown> {
  const runtime = (spec: Record<string, unknown>) => (spec.runtime as Record<string, unknown> | undefined) ?? {};
  return { ...runtime(code.spec), ...runtime(job.spec) };
}

/**
 * Records an execution of the job's deployed code (a row per task) and starts its workflow,
 * which runs the tasks. Without its workflow the execution would stay queued forever, so a
 * failed start takes it back.
 */
export async function startExecution(services: ExecutionServices, caller: Caller, path: JobPath, body: unknown) {
  const { workspace, job } = await jobOf(services, caller, path);
  const request = parsedRequest(body);
  const code = await jobCode(services.pg, services.config.dataDir, job.id);
  if (!code) throw new ApiError(503, 'not_deployed', `job '${job.name}' has no deployed code (status ${job.status}); upload a bundle first`);
  // The job's current network, like its concurrency: a PUT applies from the next execution on.
  const network = (job.spec as WorkloadSpec).network;
  const settings = { ...jobRuntimeSettings(runtimeOf(code, job), request), ...(network ? { network } : {}) };
  const rowId = newUuid();
  const executionId = request.id ?? `exec-${rowId.slice(0, 8)}`;
  const row = await services.executions.create({
    id: rowId,
    workspaceId: workspace.id,
    jobId: job.id,
    jobName: job.name,
    executionId,
    settings,
    codeDir: code.dir,
    tasks: request.tasks,
    actor: caller.clientId,
  });
  if (!row) throw conflict(`execution '${executionId}' of job '${job.name}' already exists`);
  const key: ExecutionKey = { id: rowId, executionId, accountId: caller.accountId, workspace: workspace.name, workspaceId: workspace.id, jobId: job.id, jobName: job.name };
  const input: JobExecutionInput = { key, settings, taskCount: request.tasks.length, codeDir: code.dir, nodeQueue: nodeTaskQueue(services.config), createdAt: row.created_at.getTime() };
  await startExecutionWorkflow(services, input);
  return { workspace, row, tasks: request.tasks };
}

async function startExecutionWorkflow(services: ExecutionServices, input: JobExecutionInput): Promise<void> {
  const { key } = input;
  try {
    await services.temporal.workflow.start<typeof jobExecution>('jobExecution', {
      taskQueue: services.config.taskQueue,
      workflowId: jobExecutionWorkflowId(key.workspace, key.jobName, key.executionId),
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
      args: [input],
    });
  } catch (err) {
    await services.executions.delete(key.id);
    // Still running under a deleted job of the same name.
    if (err instanceof WorkflowExecutionAlreadyStartedError) throw conflict(`execution '${key.executionId}' of a job named '${key.jobName}' is still running`);
    throw err;
  }
}

/** Asks the execution's workflow to cancel (once); its running task processes are killed. The execution as it now reads. */
export async function cancelExecution(services: ExecutionServices, caller: Caller, path: JobPath & { id: string }) {
  const { workspace, job, execution } = await executionOf(services, caller, path);
  if (await services.executions.markCancelling(execution.id)) {
    await services.temporal.workflow.getHandle(jobExecutionWorkflowId(workspace.name, job.name, execution.execution_id)).cancel();
  }
  return { workspace, row: (await services.executions.get(job.id, execution.execution_id)) as ExecutionRow };
}
