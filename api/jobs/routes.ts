import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { MAX_TASKS } from '../../domain/jobs/execution';
import { ErrorBody, commonErrors } from '../management/common-schemas';
import { ResourceStore } from '../../store/resources';
import { ExecutionStore, executionView } from '../../store/executions';
import { cancelExecution, executionOf, jobOf, startExecution, type ExecutionServices } from './execution-service';

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

type JobPathParams = { workspace: string; job: string };
type ExecutionPathParams = JobPathParams & { id: string };

/**
 * Job executions on base_url: `{workspace}/jobs/{job}/executions`. An execution is a row per
 * task in PostgreSQL plus the workflow `job/<workspace>/<job>/<executionId>` that runs them; the
 * reads here touch PostgreSQL only (execution-service.ts).
 */
export default async function jobExecutionRoutes(app: FastifyInstance) {
  const services: ExecutionServices = { pg: app.pg, resources: new ResourceStore(app.pg), executions: new ExecutionStore(app.pg), temporal: app.temporal, config: app.config };

  app.post<{ Params: JobPathParams; Body: Record<string, unknown> }>(
    '/:workspace/jobs/:job/executions',
    { schema: { tags, summary: 'Start an execution of a job: one process per task', params: JobParams, body: ExecutionBody, response: errors } },
    async (request) => {
      const { workspace, row, tasks } = await startExecution(services, request.principal, request.params, request.body);
      return { ...executionView(row, workspace.name), tasks };
    },
  );
  app.get<{ Params: JobPathParams; Querystring: { limit?: number } }>(
    '/:workspace/jobs/:job/executions',
    { schema: { tags, summary: "List a job's executions, newest first", params: JobParams, querystring: ListQuery, response: errors } },
    async (request) => {
      const { workspace, job } = await jobOf(services, request.principal, request.params);
      return (await services.executions.list(job.id, request.query.limit ?? 100)).map((row) => executionView(row, workspace.name));
    },
  );
  app.get<{ Params: ExecutionPathParams }>(
    '/:workspace/jobs/:job/executions/:id',
    { schema: { tags, summary: 'Get an execution with its status and stats', params: ExecutionParams, response: errors } },
    async (request) => {
      const { workspace, execution } = await executionOf(services, request.principal, request.params);
      return executionView(execution, workspace.name);
    },
  );
  app.get<{ Params: ExecutionPathParams }>(
    '/:workspace/jobs/:job/executions/:id/tasks',
    { schema: { tags, summary: "List an execution's tasks", params: ExecutionParams, response: errors } },
    async (request) => {
      const { execution } = await executionOf(services, request.principal, request.params);
      return services.executions.tasks(execution.id, execution.settings);
    },
  );
  app.delete<{ Params: ExecutionPathParams }>(
    '/:workspace/jobs/:job/executions/:id',
    { schema: { tags, summary: 'Cancel an execution: its running task processes are killed', params: ExecutionParams, response: errors } },
    async (request) => {
      const { workspace, row } = await cancelExecution(services, request.principal, request.params);
      return executionView(row, workspace.name);
    },
  );
}
