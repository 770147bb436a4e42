import { WorkflowExecutionAlreadyStartedError, WorkflowIdConflictPolicy } from '@temporalio/client';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { nodeTaskQueue } from '../../domain/config';
import { newUuid } from '../../domain/ids';
import {
  ExecutionRequestError,
  MAX_TASKS,
  jobExecutionWorkflowId,
  jobRuntimeSettings,
  parseExecutionRequest,
  type ExecutionKey,
} from '../../domain/jobs/execution';
import type { WorkspaceGrant } from '../../domain/principal';
import type { JobExecutionInput, jobExecution } from '../../workflows/job-execution';
import { ApiError, badRequest, conflict, forbidden, notFound } from '../../domain/errors';
import { ErrorBody, commonErrors } from '../management/common-schemas';
import { ResourceStore, type ResourceRow } from '../../store/resources';
import { jobCode } from './code-folder';
import { ExecutionStore, executionView, type ExecutionRow } from '../../store/executions';

const tags = ['jobs'];
const JobParams = Type.Object({ workspace: Type.String({ maxLength: 200 }), job: Type.String({ maxLength: 200 }) });
const ExecutionParams = Type.Object({ workspace: Type.String({ maxLength: 200 }), job: Type.String({ maxLength: 200 }), id: Type.String({ maxLength: 200 }) });
const ListQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })) });
const ExecutionBody = Type.Object(
  {
    tasks: Type.Array(Type.Object({}, { additionalProperties: true }), { maxItems: MAX_TASKS, description: 'One object of arguments per task.' }),
    env: Type.Optional(Type.Record(Type.String(), Type.String())),
    memory: Type.Optional(Type.Integer({ description: 'Memory of the execution in MB (default: the job spec).' })),
    id: Type.Optional(Type.String({ description: 'Execution id (default: generated).' })),
  },
  { additionalProperties: true },
);
const errors = { ...commonErrors, 409: ErrorBody, 503: ErrorBody };

type JobRequest = FastifyRequest<{ Params: { workspace: string; job: string } }>;

/**
 * Job executions on base_url: `{workspace}/jobs/{job}/executions`. An execution is a row per
 * task in PostgreSQL plus the workflow `job/<workspace>/<job>/<executionId>` that runs them; the
 * reads here touch PostgreSQL only.
 */
export default async function jobExecutionRoutes(app: FastifyInstance) {
  const resources = new ResourceStore(app.pg);
  const executions = new ExecutionStore(app.pg);
  const config = app.config;

  /** The caller's grant on the workspace in the path: 404 when there is no such workspace, 403 when it is not theirs. */
  async function workspaceOf(request: JobRequest): Promise<WorkspaceGrant> {
    const grant = request.principal.workspaces.get(request.params.workspace);
    if (grant) return grant;
    const { rowCount } = await app.pg.query('SELECT 1 FROM workspaces WHERE name = $1', [request.params.workspace]);
    if (!rowCount) throw notFound(`workspace '${request.params.workspace}' not found`);
    throw forbidden(`you are not a member of workspace '${request.params.workspace}'`);
  }

  async function jobOf(request: JobRequest): Promise<{ workspace: WorkspaceGrant; job: ResourceRow }> {
    const workspace = await workspaceOf(request);
    const job = await resources.get({ workspaceId: workspace.id, kind: 'jobs', name: request.params.job });
    if (!job) throw notFound(`job '${request.params.job}' not found in workspace '${workspace.name}'`);
    return { workspace, job };
  }

  async function executionOf(request: FastifyRequest<{ Params: { workspace: string; job: string; id: string } }>) {
    const { workspace, job } = await jobOf(request);
    const execution = await executions.get(job.id, request.params.id);
    if (!execution) throw notFound(`execution '${request.params.id}' of job '${job.name}' not found`);
    return { workspace, job, execution };
  }

  app.post<{ Params: { workspace: string; job: string }; Body: Record<string, unknown> }>(
    '/:workspace/jobs/:job/executions',
    { schema: { tags, summary: 'Start an execution of a job: one process per task', params: JobParams, body: ExecutionBody, response: errors } },
    async (request) => {
      const { workspace, job } = await jobOf(request);
      let body;
      try {
        body = parseExecutionRequest(request.body);
      } catch (err) {
        if (err instanceof ExecutionRequestError) throw badRequest(err.message);
        throw err;
      }
      const code = await jobCode(app.pg, config.dataDir, job.id);
      if (!code) throw new ApiError(503, 'not_deployed', `job '${job.name}' has no deployed code (status ${job.status}); upload a bundle first`);
      // The deployed revision's runtime, under the job's current one (concurrency or retries change without a new upload).
      const runtimeOf = (spec: Record<string, unknown>) => (spec.runtime as Record<string, unknown> | undefined) ?? {};
      const settings = jobRuntimeSettings({ ...runtimeOf(code.spec), ...runtimeOf(job.spec) }, body);
      const rowId = newUuid();
      const executionId = body.id ?? `exec-${rowId.slice(0, 8)}`;
      const row = await executions.create({
        id: rowId,
        workspaceId: workspace.id,
        jobId: job.id,
        jobName: job.name,
        executionId,
        settings,
        codeDir: code.dir,
        tasks: body.tasks,
        actor: request.principal.clientId,
      });
      if (!row) throw conflict(`execution '${executionId}' of job '${job.name}' already exists`);
      const key: ExecutionKey = {
        id: rowId,
        executionId,
        accountId: request.principal.accountId,
        workspace: workspace.name,
        workspaceId: workspace.id,
        jobId: job.id,
        jobName: job.name,
      };
      const input: JobExecutionInput = { key, settings, taskCount: body.tasks.length, codeDir: code.dir, nodeQueue: nodeTaskQueue(config), createdAt: row.created_at.getTime() };
      try {
        await app.temporal.workflow.start<typeof jobExecution>('jobExecution', {
          taskQueue: config.taskQueue,
          workflowId: jobExecutionWorkflowId(workspace.name, job.name, executionId),
          workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
          args: [input],
        });
      } catch (err) {
        // Without its workflow the execution would stay queued forever: take it back.
        await executions.delete(rowId);
        // Still running under a deleted job of the same name.
        if (err instanceof WorkflowExecutionAlreadyStartedError) throw conflict(`execution '${executionId}' of a job named '${job.name}' is still running`);
        throw err;
      }
      return { ...executionView(row, workspace.name), tasks: body.tasks };
    },
  );

  app.get<{ Params: { workspace: string; job: string }; Querystring: { limit?: number } }>(
    '/:workspace/jobs/:job/executions',
    { schema: { tags, summary: "List a job's executions, newest first", params: JobParams, querystring: ListQuery, response: errors } },
    async (request) => {
      const { workspace, job } = await jobOf(request);
      const rows = await executions.list(job.id, request.query.limit ?? 100);
      return rows.map((row) => executionView(row, workspace.name));
    },
  );

  app.get<{ Params: { workspace: string; job: string; id: string } }>(
    '/:workspace/jobs/:job/executions/:id',
    { schema: { tags, summary: 'Get an execution with its status and stats', params: ExecutionParams, response: errors } },
    async (request) => {
      const { workspace, execution } = await executionOf(request);
      return executionView(execution, workspace.name);
    },
  );

  app.get<{ Params: { workspace: string; job: string; id: string } }>(
    '/:workspace/jobs/:job/executions/:id/tasks',
    { schema: { tags, summary: "List an execution's tasks", params: ExecutionParams, response: errors } },
    async (request) => {
      const { execution } = await executionOf(request);
      return executions.tasks(execution.id, execution.settings);
    },
  );

  app.delete<{ Params: { workspace: string; job: string; id: string } }>(
    '/:workspace/jobs/:job/executions/:id',
    { schema: { tags, summary: 'Cancel an execution: its running task processes are killed', params: ExecutionParams, response: errors } },
    async (request) => {
      const { workspace, job, execution } = await executionOf(request);
      if (await executions.markCancelling(execution.id)) {
        await app.temporal.workflow.getHandle(jobExecutionWorkflowId(workspace.name, job.name, execution.execution_id)).cancel();
      }
      return executionView((await executions.get(job.id, execution.execution_id)) as ExecutionRow, workspace.name);
    },
  );
}
