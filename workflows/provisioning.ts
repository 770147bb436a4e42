import { ActivityFailure, ApplicationFailure, proxyActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { ProvisioningActivities, ProvisioningRun } from '../activities/provisioning';
import type { ProvisioningResult } from '../core/integrations/provisioning';

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

function failureMessage(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}

/**
 * The OAuth-to-MCP saga for one tenant (auth steps 4-6): exchange the authorization code,
 * create the tenant's integration connection, create its MCP server bound to it. When a step
 * fails, what earlier steps created is removed again and the run is recorded FAILED.
 * Workflow id `provision/<workspace>/<integration>/<tenant>` with the USE_EXISTING conflict
 * policy: one run per tenant at a time.
 */
export async function provisionTenant(input: ProvisioningInput): Promise<ProvisioningResult> {
  upsertSearchAttributes({ HangarWorkspace: [input.workspace], HangarResourceKind: ['provisioning'], HangarResourceName: [input.tenant] });
  const run: ProvisioningRun = { ...input, provisioningId: workflowInfo().firstExecutionRunId };
  const compensations: (() => Promise<void>)[] = [];
  try {
    const { sealedRefreshToken } = await provider.exchangeAuthorizationCode(run);
    const connection = await store.upsertTenantConnection(run, sealedRefreshToken);
    if (connection.createdByThisRun) compensations.unshift(() => store.removeTenantConnection(run, connection.name));
    const result = await store.createTenantFunction(run, connection.name);
    await store.recordProvisioningOutcome(run, { status: 'SUCCEEDED', result });
    return result;
  } catch (err) {
    const error = failureMessage(err);
    for (const compensate of compensations) await compensate();
    await store.recordProvisioningOutcome(run, { status: 'FAILED', error });
    throw ApplicationFailure.nonRetryable(error, 'ProvisioningFailed');
  }
}
