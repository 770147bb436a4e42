import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { WorkflowIdConflictPolicy } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { createHash } from 'node:crypto';
import { findIntegration, INTEGRATIONS, isProvisionable } from '../../../domain/integrations/catalog';
import { provisioningWorkflowId, tenantNameProblem } from '../../../domain/integrations/provisioning';
import type { provisionTenant, ProvisioningInput } from '../../../workflows/provisioning';
import { ApiError, badRequest, conflict, notFound } from '../../../domain/errors';
import { commonErrors } from '../common-schemas';
import { requestWorkspace } from '../workspace-context';
import { ProvisioningStore, type ProvisioningRow } from '../../../store/provisionings';
import { IdParam, Provisioning, ProvisioningCreate, ProvisioningListQuery } from './schemas';

const tags = ['integrations'];
const DEFAULT_LIST_LIMIT = 100;

function view(row: ProvisioningRow) {
  return {
    id: row.id,
    workspace: row.workspace,
    integration: row.integration,
    tenant: row.tenant,
    status: row.status,
    ...(row.result ? { result: row.result } : {}),
    ...(row.error ? { error: row.error } : {}),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/**
 * Whether a recorded run answers a request for the code with this hash: it is that code's run
 * and has not failed. A failed run does not: the provider may never have taken the code (an
 * outage), so it may be tried again, and a code it did take is refused by the provider at once.
 */
const answersCode = (row: ProvisioningRow, codeHash: string) => row.code_hash === codeHash && row.status !== 'FAILED';

const JOIN_ATTEMPTS = 3;
const CLOSING_WAIT_MS = 10_000;

interface RunStarter {
  temporal: Client;
  taskQueue: string;
  log: FastifyBaseLogger;
  recorded(id: string): Promise<ProvisioningRow | undefined>;
}

/**
 * Starts the tenant's provisioning workflow, or joins the run in progress (USE_EXISTING), and
 * returns the run's id. A run that has already recorded an outcome that does not answer this
 * request (another code's, or a failure) is only closing: this request waits for it to close
 * and starts its own run rather than being handed that finished result.
 */
async function startRun(starter: RunStarter, workflowId: string, input: ProvisioningInput): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    let handle;
    try {
      handle = await starter.temporal.workflow.start<typeof provisionTenant>('provisionTenant', {
        taskQueue: starter.taskQueue,
        workflowId,
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
        args: [input],
      });
    } catch (err) {
      starter.log.warn({ workflowId, reason: (err as Error).message }, 'could not start a provisioning');
      throw new ApiError(503, 'unavailable', 'the workflow service is unavailable; try again shortly');
    }
    const joined = await starter.recorded(handle.firstExecutionRunId);
    const closing = joined && joined.status !== 'RUNNING' && !answersCode(joined, input.codeHash);
    if (!closing || attempt >= JOIN_ATTEMPTS) return handle.firstExecutionRunId;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([handle.result().catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, CLOSING_WAIT_MS)))]);
    clearTimeout(timer);
  }
}

/**
 * The OAuth-to-MCP provisioning of one tenant (auth steps 4-6) in one call: the customer's
 * backend posts the authorization code its redirect received and polls the run until it has
 * the MCP server's URL.
 */
export default async function provisioningRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const store = new ProvisioningStore(app.pg);

  app.post(
    '/v0/integrations/provisionings',
    {
      schema: {
        tags,
        summary: "Provision a tenant's connection and MCP server from an authorization code",
        body: ProvisioningCreate,
        response: { 202: Provisioning, 503: commonErrors[400], ...commonErrors },
      },
    },
    async (request, reply) => {
      const workspace = requestWorkspace(request);
      const body = request.body;
      const integration = findIntegration(body.integration);
      if (!integration) throw badRequest(`integration: unknown integration '${body.integration}' (known: ${INTEGRATIONS.map((i) => i.name).join(', ')})`);
      if (!isProvisionable(integration)) {
        throw badRequest(`integration: '${integration.name}' has no OAuth flow and MCP server to provision (known: ${INTEGRATIONS.filter(isProvisionable).map((i) => i.name).join(', ')})`);
      }
      const tenantProblem = tenantNameProblem(integration.name, body.tenant);
      if (tenantProblem) throw badRequest(tenantProblem);
      const codeHash = createHash('sha256').update(body.code).digest('hex');

      // The same code again (a retried request): the run it started, not a second exchange.
      const earlier = await store.findByCode(workspace.id, integration.name, body.tenant, codeHash);
      if (earlier && answersCode(earlier, codeHash)) return reply.status(202).send(view(earlier));

      const workflowId = provisioningWorkflowId(workspace.name, integration.name, body.tenant);
      const input: ProvisioningInput = {
        workspaceId: workspace.id,
        workspace: workspace.name,
        integration: integration.name,
        tenant: body.tenant,
        clientId: body.clientId,
        redirectUri: body.redirectUri,
        sealedCredentials: app.secrets.seal(JSON.stringify({ code: body.code, clientSecret: body.clientSecret }), workflowId),
        codeHash,
        actor: request.principal.clientId,
      };
      const provisioningId = await startRun(
        { temporal: app.temporal, taskQueue: app.config.taskQueue, log: request.log, recorded: (id) => store.get(workspace.id, id) },
        workflowId,
        input,
      );
      const key = { id: provisioningId, workspaceId: workspace.id, integration: integration.name, tenant: body.tenant, codeHash, actor: request.principal.clientId };
      await store.recordStarted(key);
      const row = await store.get(workspace.id, provisioningId);
      if (!row) throw new Error('the provisioning record vanished');
      return reply.status(202).send(view(row));
    },
  );

  app.get(
    '/v0/integrations/provisionings',
    {
      schema: { tags, summary: "List the workspace's provisionings, newest first", querystring: ProvisioningListQuery, response: { 200: Type.Array(Provisioning), ...commonErrors } },
    },
    async (request) => {
      const { limit, tenant } = request.query;
      return (await store.list(requestWorkspace(request).id, { tenant, limit: limit ?? DEFAULT_LIST_LIMIT })).map(view);
    },
  );

  app.delete(
    '/v0/integrations/provisionings/:id',
    {
      schema: {
        tags,
        summary: "Delete a finished provisioning's record (the connection and function it made stay)",
        params: IdParam,
        response: { 200: Provisioning, 409: commonErrors[400], ...commonErrors },
      },
    },
    async (request) => {
      const workspace = requestWorkspace(request);
      const outcome = await store.deleteFinished(workspace.id, request.params.id);
      if (!outcome) throw notFound(`provisioning '${request.params.id}' not found in workspace '${workspace.name}'`);
      if ('running' in outcome) throw conflict(`provisioning '${request.params.id}' is RUNNING: its record can be deleted once it has finished`);
      return view(outcome.deleted);
    },
  );

  app.get(
    '/v0/integrations/provisionings/:id',
    { schema: { tags, summary: 'Get the status and result of a provisioning', params: IdParam, response: { 200: Provisioning, ...commonErrors } } },
    async (request) => {
      const workspace = requestWorkspace(request);
      const row = await store.get(workspace.id, request.params.id);
      if (!row) throw notFound(`provisioning '${request.params.id}' not found in workspace '${workspace.name}'`);
      return view(row);
    },
  );
}
