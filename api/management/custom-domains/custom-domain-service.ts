import { WorkflowIdConflictPolicy, type Client } from '@temporalio/client';
import type { Pool } from 'pg';
import type { HangarConfig } from '../../../domain/config';
import { customDomainRouteKey, customDomainWorkflowId, domainProblem, type CustomDomainKey, type CustomDomainSpec } from '../../../domain/custom-domain/custom-domain';
import { badRequest, conflict } from '../../../domain/errors';
import type { WorkspaceGrant } from '../../../domain/principal';
import { isUniqueViolation } from '../../../store/pg-errors';
import type { ResourceRow, ResourceStore } from '../../../store/resources';
import { announceRouteChanges } from '../../../store/route-notices';
import type { StateHistory } from '../../../store/state-history';
import type { CustomDomainLifecycleInput, customDomainLifecycle } from '../../../workflows/custom-domain-lifecycle';
import { assertNameUnchanged, createNamed, findNamed, updateNamed, type MetadataInput } from '../resources/named';
import { startOwningWorkflow } from '../resources/owning-workflow';

export const CUSTOM_DOMAINS = { path: 'customdomains', singular: 'custom domain' };

/** What the custom-domain operations work with: the resource rows and their state history, the database, Temporal, the settings. */
export interface CustomDomainServices {
  store: ResourceStore;
  history: StateHistory;
  pg: Pool;
  temporal: Client;
  config: HangarConfig;
}

export interface CustomDomainRequest {
  metadata: MetadataInput;
  spec: CustomDomainSpec;
}

const keyOf = (row: ResourceRow, workspaceId: string): CustomDomainKey => ({ id: row.id, workspace: row.workspace, workspaceId, name: row.name });

/** A well-formed host name that is not one of the platform's own (a domain claiming one would take over the platform's routes). */
function checkDomain(config: HangarConfig, domain: string): void {
  const problem = domainProblem('body.spec.domain', domain);
  if (problem) throw badRequest(problem);
  const platformHosts = new Set([new URL(config.runUrl).hostname, new URL(config.baseUrl).hostname]);
  if (platformHosts.has(domain)) throw badRequest(`body.spec.domain '${domain}' is the platform's own host`);
}

/** Runs a write that may claim a host name; another domain holding it anywhere on the platform is a 409. */
async function claiming<T>(domain: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    // The message does not say which workspace holds it.
    if (isUniqueViolation(err)) throw conflict(`domain '${domain}' is already taken`);
    throw err;
  }
}

export function findCustomDomain(services: CustomDomainServices, workspace: WorkspaceGrant, name: string): Promise<ResourceRow> {
  return findNamed(services.store, CUSTOM_DOMAINS.path, CUSTOM_DOMAINS.singular, workspace, name);
}

/** Claims the host name (DEPLOYING) and starts the domain's workflow, which activates it. */
export async function createCustomDomain(services: CustomDomainServices, workspace: WorkspaceGrant, body: CustomDomainRequest, actor: string): Promise<ResourceRow> {
  const { store, temporal, config } = services;
  const { metadata, spec } = body;
  checkDomain(config, spec.domain);
  const row = await claiming(spec.domain, () =>
    createNamed(store, workspace, CUSTOM_DOMAINS, { metadata, spec: { domain: spec.domain, target: spec.target }, status: 'DEPLOYING', message: 'claiming the domain', actor }),
  );
  await announceRouteChanges(services.pg, customDomainRouteKey(spec.domain));
  await startOwningWorkflow(store, row.id, () =>
    temporal.workflow.start<typeof customDomainLifecycle>('customDomainLifecycle', {
      taskQueue: config.taskQueue,
      workflowId: customDomainWorkflowId(workspace.name, row.name),
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      args: [{ key: keyOf(row, workspace.id), phase: 'create' } satisfies CustomDomainLifecycleInput],
    }),
  );
  return row;
}

/** Changes the host name, target, labels or display name; gateways drop the routes of the old and the new host. */
export async function updateCustomDomain(
  services: CustomDomainServices,
  workspace: WorkspaceGrant,
  name: string,
  body: CustomDomainRequest,
  actor: string,
): Promise<ResourceRow> {
  const { metadata, spec } = body;
  assertNameUnchanged(metadata.name, name);
  checkDomain(services.config, spec.domain);
  const current = await findCustomDomain(services, workspace, name);
  if (current.status === 'DELETING') throw conflict(`custom domain '${current.name}' is being deleted`);
  const updated = await claiming(spec.domain, () =>
    updateNamed(services.store, workspace, CUSTOM_DOMAINS, current, { metadata, spec: { domain: spec.domain, target: spec.target }, actor }),
  );
  // The id drops the entry of the old host name, the key a cached "unknown" of the new one.
  await announceRouteChanges(services.pg, updated.id, customDomainRouteKey(spec.domain));
  return updated;
}

/**
 * Stops routing and billing at once, without waiting for the workflow, which records the last
 * period of use and removes the record; the row as it now reads.
 */
export async function deleteCustomDomain(services: CustomDomainServices, workspace: WorkspaceGrant, name: string): Promise<ResourceRow> {
  const row = await findCustomDomain(services, workspace, name);
  if (row.status !== 'DELETING') {
    await services.store.transition(row.id, 'DELETING', { type: 'Normal', message: 'deleted by request' });
  }
  // Billing ends now too, in the state history as in the workflow (a repeated DELETE moves neither).
  const deletedAt = Date.now();
  await services.history.end(row.id, deletedAt);
  await services.temporal.workflow.signalWithStart<typeof customDomainLifecycle, [number]>('customDomainLifecycle', {
    taskQueue: services.config.taskQueue,
    workflowId: customDomainWorkflowId(workspace.name, row.name),
    args: [{ key: keyOf(row, workspace.id), phase: 'delete' }],
    signal: 'delete',
    signalArgs: [deletedAt],
  });
  return { ...row, status: 'DELETING' };
}
