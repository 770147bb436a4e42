import { ActivityFailure, ApplicationFailure, patched, proxyActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { ProvisioningActivities, ProvisioningRun } from '../activities/provisioning';
import { tenantResourceName, type ProvisioningResult } from '../domain/integrations/provisioning';

/** What the API starts a provisioning with; the run's id is added by the workflow. */
export type ProvisioningInput = Omit<ProvisioningRun, 'provisioningId'>;

// Calls to the provider: a few quick retries of transient failures (5xx, timeouts); a refused
// grant fails at once (the activity marks it non-retryable).
const provider = proxyActivities<ProvisioningActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 6 },
});
// Our own database: retried until it answers, so that a short outage neither fails a
// provisioning nor leaves a compensation undone.
const store = proxyActivities<ProvisioningActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

// Waiting for a tenant's server to restart with its new token: as long as a deployment may take,
// with a heartbeat.
const deploys = proxyActivities<ProvisioningActivities>({
  startToCloseTimeout: '5m',
  heartbeatTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumAttempts: 3 },
});

function failureMessage(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}

/**
 * The OAuth-to-MCP saga for one tenant (auth steps 4-6): exchange the authorization code,
 * create the tenant's integration connection, create its MCP server bound to it; for a tenant
 * provisioned before, restart the servers bound to the connection with the new refresh token.
 * When a step fails, what earlier steps created is removed again and the run is recorded FAILED.
 * Workflow id `provision/<workspace>/<integration>/<tenant>` with the USE_EXISTING conflict
 * policy: one run per tenant at a time.
 */
export async function provisionTenant(input: ProvisioningInput): Promise<ProvisioningResult> {
  // Named after what it makes (the tenant's connection and function share the name), so the
  // Temporal UI finds it beside that function's deployment.
  const made = tenantResourceName(input.integration, input.tenant);
  upsertSearchAttributes({ HangarWorkspace: [input.workspace], HangarResourceKind: ['provisioning'], HangarResourceName: [made] });
  const run: ProvisioningRun = { ...input, provisioningId: workflowInfo().firstExecutionRunId };
  const compensations: (() => Promise<void>)[] = [];
  try {
    const { sealedRefreshToken } = await provider.exchangeAuthorizationCode(run);
    const connection = await store.upsertTenantConnection(run, sealedRefreshToken);
    if (connection.createdByThisRun) compensations.unshift(() => store.removeTenantConnection(run, connection.name));
    const result = await store.createTenantFunction(run, connection.name);
    // A tenant provisioned before: its server still runs with the old refresh token. (Runs that
    // began before this step existed replay without it.)
    if (!connection.createdByThisRun && patched('restart-bound-servers')) {
      await deploys.awaitTenantRollout(run, await store.rollOutTenantConnection(run, connection.name));
    }
    await store.recordProvisioningOutcome(run, { status: 'SUCCEEDED', result });
    return result;
  } catch (err) {
    const error = failureMessage(err);
    for (const compensate of compensations) await compensate();
    await store.recordProvisioningOutcome(run, { status: 'FAILED', error });
    throw ApplicationFailure.nonRetryable(error, 'ProvisioningFailed');
  }
}
