import { WorkflowIdConflictPolicy } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import { createHash } from 'node:crypto';
import type { HangarConfig } from '../../../domain/config';
import { ApiError, badRequest, conflict, notFound } from '../../../domain/errors';
import { findIntegration, INTEGRATIONS, isProvisionable, type IntegrationDefinition } from '../../../domain/integrations/catalog';
import { provisioningWorkflowId, tenantNameProblem } from '../../../domain/integrations/provisioning';
import type { WorkspaceGrant } from '../../../domain/principal';
import type { SecretBox } from '../../../domain/secret-box';
import type { ProvisioningRow, ProvisioningStore } from '../../../store/provisionings';
import type { provisionTenant, ProvisioningInput } from '../../../workflows/provisioning';

const JOIN_ATTEMPTS = 3;
const CLOSING_WAIT_MS = 10_000;

/** What the provisioning operations work with: the records, Temporal, the sealing of credentials, the settings. */
export interface ProvisioningServices {
  store: ProvisioningStore;
  temporal: Client;
  secrets: SecretBox;
  config: HangarConfig;
  log: { warn(details: object, message: string): void };
}

export interface ProvisioningRequest {
  integration: string;
  tenant: string;
  code: string;
  redirectUri: string;
  clientId: string;
  clientSecret: string;
}

/**
 * Whether a recorded run answers a request for the code with this hash: it is that code's run
 * and has not failed. A failed run does not: the provider may never have taken the code (an
 * outage), so it may be tried again, and a code it did take is refused by the provider at once.
 */
const answersCode = (row: ProvisioningRow, codeHash: string) => row.code_hash === codeHash && row.status !== 'FAILED';

/** The catalog integration a provisioning names, when it has an OAuth flow and an MCP server and the tenant name suits it. */
function provisionableIntegration(name: string, tenant: string): IntegrationDefinition {
  const integration = findIntegration(name);
  if (!integration) throw badRequest(`integration: unknown integration '${name}' (known: ${INTEGRATIONS.map((i) => i.name).join(', ')})`);
  if (!isProvisionable(integration)) {
    throw badRequest(`integration: '${integration.name}' has no OAuth flow and MCP server to provision (known: ${INTEGRATIONS.filter(isProvisionable).map((i) => i.name).join(', ')})`);
  }
  const tenantProblem = tenantNameProblem(integration.name, tenant);
  if (tenantProblem) throw badRequest(tenantProblem);
  return integration;
}

/**
 * Starts the tenant's provisioning workflow, or joins the run in progress (USE_EXISTING), and
 * returns the run's id. A run that has already recorded an outcome that does not answer this
 * request (another code's, or a failure) is only closing: this request waits for it to close
 * and starts its own run rather than being handed that finished result.
 */
async function startRun(services: ProvisioningServices, workspaceId: string, workflowId: string, input: ProvisioningInput): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    let handle;
    try {
      handle = await services.temporal.workflow.start<typeof provisionTenant>('provisionTenant', {
        taskQueue: services.config.taskQueue,
        workflowId,
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
        args: [input],
      });
    } catch (err) {
      services.log.warn({ workflowId, reason: (err as Error).message }, 'could not start a provisioning');
      throw new ApiError(503, 'unavailable', 'the workflow service is unavailable; try again shortly');
    }
    const joined = await services.store.get(workspaceId, handle.firstExecutionRunId);
    const closing = joined && joined.status !== 'RUNNING' && !answersCode(joined, input.codeHash);
    if (!closing || attempt >= JOIN_ATTEMPTS) return handle.firstExecutionRunId;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([handle.result().catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, CLOSING_WAIT_MS)))]);
    clearTimeout(timer);
  }
}

/**
 * Provisions a tenant from an authorization code: the run that code already started (a retried
 * request), or a new run of the tenant's workflow, recorded. The credentials travel sealed.
 */
export async function startProvisioning(services: ProvisioningServices, workspace: WorkspaceGrant, body: ProvisioningRequest, actor: string): Promise<ProvisioningRow> {
  const { store } = services;
  const integration = provisionableIntegration(body.integration, body.tenant);
  const codeHash = createHash('sha256').update(body.code).digest('hex');
  const earlier = await store.findByCode(workspace.id, integration.name, body.tenant, codeHash);
  if (earlier && answersCode(earlier, codeHash)) return earlier;

  const workflowId = provisioningWorkflowId(workspace.name, integration.name, body.tenant);
  const input: ProvisioningInput = {
    workspaceId: workspace.id,
    workspace: workspace.name,
    integration: integration.name,
    tenant: body.tenant,
    clientId: body.clientId,
    redirectUri: body.redirectUri,
    sealedCredentials: services.secrets.seal(JSON.stringify({ code: body.code, clientSecret: body.clientSecret }), workflowId),
    codeHash,
    actor,
  };
  const provisioningId = await startRun(services, workspace.id, workflowId, input);
  await store.recordStarted({ id: provisioningId, workspaceId: workspace.id, integration: integration.name, tenant: body.tenant, codeHash, actor });
  const row = await store.get(workspace.id, provisioningId);
  if (!row) throw new Error('the provisioning record vanished');
  return row;
}

const missing = (id: string, workspace: WorkspaceGrant) => notFound(`provisioning '${id}' not found in workspace '${workspace.name}'`);

export async function findProvisioning(store: ProvisioningStore, workspace: WorkspaceGrant, id: string): Promise<ProvisioningRow> {
  const row = await store.get(workspace.id, id);
  if (!row) throw missing(id, workspace);
  return row;
}

/** Deletes the record of a finished provisioning (409 while it runs); the connection and function it made stay. */
export async function deleteProvisioning(store: ProvisioningStore, workspace: WorkspaceGrant, id: string): Promise<ProvisioningRow> {
  const outcome = await store.deleteFinished(workspace.id, id);
  if (!outcome) throw missing(id, workspace);
  if ('running' in outcome) throw conflict(`provisioning '${id}' is RUNNING: its record can be deleted once it has finished`);
  return outcome.deleted;
}
