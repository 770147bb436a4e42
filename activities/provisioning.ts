import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { awaitConnectionRollout, startConnectionRollout, type RolloutTarget } from '../control-plane/connection-rollout';
import { ConnectionStore } from '../store/connections';
import { ProvisioningStore } from '../store/provisionings';
import { ResourceStore } from '../store/resources';
import { deployWithoutBundle } from '../control-plane/deployments';
import { validateFunctionSpec } from '../control-plane/connection-bindings';
import { ApiError } from '../domain/errors';
import { findIntegration, isProvisionable, type ProvisionableIntegration } from '../domain/integrations/catalog';
import { MCP_FUNCTION_TYPE, boundConnections } from '../domain/integrations/function-binding';
import { provisioningWorkflowId, tenantResourceName, type ProvisioningResult } from '../domain/integrations/provisioning';
import { WORKLOAD_KIND_TRAITS } from '../domain/workloads/kinds';
import type { WorkloadSpec } from '../domain/workloads/workload';
import { defaultWorkloadImage } from '../domain/workloads/platform-code';
import { withRecordedImage } from '../domain/images/recorded-image';
import { loadMasterKey } from '../store/master-key';
import { SecretBox } from '../domain/secret-box';
import { requestToken, TokenEndpointError } from '../integrations/oauth/token-client';
import type { ActivityDeps } from './support/activity-deps';

/**
 * What a provisioning run carries through Temporal's history. The authorization code and the
 * client secret travel sealed with the master key, bound to the workflow id: history holds no
 * secret in clear.
 */
export interface ProvisioningRun {
  provisioningId: string;
  workspaceId: string;
  workspace: string;
  integration: string;
  tenant: string;
  clientId: string;
  redirectUri: string;
  /** Sealed JSON `{code, clientSecret}`. */
  sealedCredentials: string;
  codeHash: string;
  actor: string;
}

export type ProvisioningOutcome = { status: 'SUCCEEDED'; result: ProvisioningResult } | { status: 'FAILED'; error: string };

/** A failure that retrying cannot fix (a refused grant, a name taken); the saga compensates at once. */
const rejected = (message: string) => ApplicationFailure.nonRetryable(message, 'ProvisioningRejected');

/** How long a re-provisioned tenant's server may take to restart with its new refresh token. */
const ROLLOUT_WAIT_MS = 4 * 60_000;

/** What the provider's OAuth error codes mean for the customer's backend. */
const GRANT_ERROR_HINTS: Record<string, string> = {
  redirect_uri_mismatch: 'redirectUri must be exactly the redirect_uri of the authorization request, as registered at the provider',
  invalid_grant: 'the authorization code is wrong, expired or already used: have the user authorize again',
  invalid_client: 'clientId or clientSecret is wrong',
};

/** Sealing for values in a run's history, bound to the run's workflow id. */
function sealedFor(box: SecretBox) {
  const workflowId = (run: ProvisioningRun) => provisioningWorkflowId(run.workspace, run.integration, run.tenant);
  return {
    seal: (run: ProvisioningRun, value: string) => box.seal(value, workflowId(run)),
    open: (run: ProvisioningRun, sealed: string) => box.open(sealed, workflowId(run)),
  };
}

/** What the saga's steps work with: the stores, and the sealing of values in a run's history. */
interface SagaServices {
  deps: ActivityDeps;
  history: ReturnType<typeof sealedFor>;
  connections: ConnectionStore;
  resources: ResourceStore;
}

const workspaceOf = (run: ProvisioningRun) => ({ id: run.workspaceId, name: run.workspace });

function integrationOf(run: ProvisioningRun): ProvisionableIntegration {
  const integration = findIntegration(run.integration);
  if (!integration) throw rejected(`unknown integration '${run.integration}'`);
  if (!isProvisionable(integration)) throw rejected(`integration '${run.integration}' has no OAuth flow and MCP server to provision`);
  return integration;
}

/** The OAuth-to-MCP provisioning saga's steps (auth steps 4-6) and their compensation. */
export function createProvisioningActivities(deps: ActivityDeps) {
  const box = new SecretBox(loadMasterKey(deps.config));
  const saga: SagaServices = { deps, history: sealedFor(box), connections: new ConnectionStore(deps.pg, box), resources: new ResourceStore(deps.pg) };
  const provisionings = new ProvisioningStore(deps.pg);

  return {
    exchangeAuthorizationCode: (run: ProvisioningRun) => exchangeAuthorizationCode(saga, run),
    upsertTenantConnection: (run: ProvisioningRun, sealedRefreshToken: string) => upsertTenantConnection(saga, run, sealedRefreshToken),
    createTenantFunction: (run: ProvisioningRun, connectionName: string) => createTenantFunction(saga, run, connectionName),

    /**
     * For a tenant provisioned before: the servers bound to its connection (its own, and any
     * other) still hold the old refresh token, perhaps revoked. Each gets a new revision, which
     * starts with the new one.
     */
    async rollOutTenantConnection(run: ProvisioningRun, connectionName: string): Promise<RolloutTarget[]> {
      return startConnectionRollout(deps, workspaceOf(run), connectionName, run.actor);
    },

    awaitTenantRollout: (run: ProvisioningRun, targets: RolloutTarget[]) => awaitTenantRollout(deps, targets),

    /** Compensation of step 5: removes the connection if, and only if, this run created it. */
    async removeTenantConnection(run: ProvisioningRun, connectionName: string): Promise<void> {
      await saga.connections.deleteProvisioned(run.workspaceId, connectionName, run.provisioningId);
    },

    async recordProvisioningOutcome(run: ProvisioningRun, outcome: ProvisioningOutcome): Promise<void> {
      await provisionings.recordOutcome(
        { id: run.provisioningId, workspaceId: run.workspaceId, integration: run.integration, tenant: run.tenant, codeHash: run.codeHash, actor: run.actor },
        outcome,
      );
    },
  };
}

/**
 * Step 4: the code for tokens at the provider's token endpoint. 5xx, timeouts and network
 * errors are thrown as retryable; a 4xx is final. Returns the refresh token sealed.
 */
async function exchangeAuthorizationCode({ deps, history }: SagaServices, run: ProvisioningRun): Promise<{ sealedRefreshToken: string }> {
  const integration = integrationOf(run);
  const { code, clientSecret } = JSON.parse(history.open(run, run.sealedCredentials)) as { code: string; clientSecret: string };
  let tokens;
  try {
    tokens = await requestToken(
      integration.oauth.endpoints(deps.config).tokenUrl,
      { grant_type: 'authorization_code', code, client_id: run.clientId, client_secret: clientSecret, redirect_uri: run.redirectUri },
      { secrets: [code, clientSecret] },
    );
  } catch (err) {
    if (err instanceof TokenEndpointError && !err.transient) {
      const hint = err.oauthError ? GRANT_ERROR_HINTS[err.oauthError] : undefined;
      throw rejected(`exchanging the authorization code failed: ${err.message}${hint ? ` (${hint})` : ''}`);
    }
    throw err;
  }
  if (!tokens.refresh_token) {
    throw rejected(
      'the provider returned no refresh_token: the authorization request lacked access_type=offline ' +
        '(send access_type=offline, and prompt=consent for a user who approved before, then have the user authorize again)',
    );
  }
  const granted = tokens.scope?.split(' ');
  const lacking = granted && integration.oauth.requiredScopes.find((scope) => !granted.includes(scope));
  if (lacking) throw rejected(`the user did not grant the scope ${lacking}, without which integration '${integration.name}' cannot work`);
  return { sealedRefreshToken: history.seal(run, tokens.refresh_token) };
}

/** Step 5: the tenant's connection, created or (for a tenant provisioned before) refreshed. */
async function upsertTenantConnection({ history, connections }: SagaServices, run: ProvisioningRun, sealedRefreshToken: string): Promise<{ name: string; createdByThisRun: boolean }> {
  const integration = integrationOf(run);
  const { clientSecret } = JSON.parse(history.open(run, run.sealedCredentials)) as { clientSecret: string };
  const name = tenantResourceName(integration.name, run.tenant);
  const upserted = await connections.upsertProvisioned(
    run.workspaceId,
    {
      name,
      displayName: `${integration.displayName} of ${run.tenant}`,
      labels: {},
      integration: integration.name,
      secret: { CLIENT_ID: run.clientId, CLIENT_SECRET: clientSecret, REFRESH_TOKEN: history.open(run, sealedRefreshToken) },
    },
    run.actor,
    { tenant: run.tenant, provisioningId: run.provisioningId },
  );
  if (upserted.outcome === 'taken') {
    throw rejected(`integration connection '${name}' already exists in workspace '${run.workspace}' and was not provisioned for tenant '${run.tenant}'`);
  }
  return { name, createdByThisRun: upserted.createdByThisRun };
}

const functionKind = WORKLOAD_KIND_TRAITS.functions;

/**
 * Step 6: the tenant's MCP server, through the same validation as POST /v0/functions. An
 * existing function of this tenant bound to the connection is kept (provisioning twice
 * yields one); any other function of that name is a collision.
 */
async function createTenantFunction({ deps, resources }: SagaServices, run: ProvisioningRun, connectionName: string): Promise<ProvisioningResult> {
  const integration = integrationOf(run);
  const name = tenantResourceName(integration.name, run.tenant);
  // Its image recorded as POST /v0/functions records it: the integration's server is the platform's code, on `base`.
  const bound: WorkloadSpec = { type: MCP_FUNCTION_TYPE, integrationConnections: [connectionName], runtime: { type: MCP_FUNCTION_TYPE } };
  const spec = withRecordedImage(bound, undefined, defaultWorkloadImage(functionKind.path, bound));
  try {
    await validateFunctionSpec(deps, workspaceOf(run), spec);
  } catch (err) {
    if (err instanceof ApiError && err.statusCode < 500) throw rejected(`creating function '${name}' failed: ${err.message}`);
    throw err;
  }
  const key = { workspaceId: run.workspaceId, kind: functionKind.path, name };
  const input = { displayName: `${integration.displayName} MCP server of ${run.tenant}`, labels: {}, spec };
  const owner = { provisionedTenant: run.tenant, provisionedIntegration: integration.name };
  const created = await resources.create(key, input, functionKind.initialStatus, functionKind.initialMessage(input.spec), run.actor, owner);
  const row = created ?? (await resources.get(key));
  if (!created) {
    const ours =
      row?.state.provisionedTenant === run.tenant &&
      row.state.provisionedIntegration === integration.name &&
      boundConnections(row.spec).includes(connectionName);
    if (!ours) throw rejected(`function '${name}' already exists in workspace '${run.workspace}' and is not the MCP server of tenant '${run.tenant}'`);
  }
  // Deploy it the way POST /v0/functions does; a retry finding it still undeployed asks again.
  if (row && row.status === functionKind.initialStatus) {
    await deployWithoutBundle(
      deps,
      { id: row.id, workspace: run.workspace, workspaceId: run.workspaceId, kind: 'functions', name },
      spec,
      run.actor,
    );
  }
  return { connectionName, functionName: name, mcpUrl: functionKind.url(deps.config, run.workspace, name) };
}

/** Waits for the rollout's restarts: the run succeeds only once the servers serve with the new token. */
async function awaitTenantRollout(deps: ActivityDeps, targets: RolloutTarget[]): Promise<void> {
  const outcomes = await awaitConnectionRollout(deps.pg, targets, { timeoutMs: ROLLOUT_WAIT_MS, onPoll: () => Context.current().heartbeat() });
  const failed = outcomes.find((outcome) => outcome.status === 'FAILED');
  if (failed) throw rejected(`function '${failed.function}' could not restart with the new refresh token: ${failed.message ?? 'its revision failed'}`);
  const pending = outcomes.find((outcome) => outcome.status === 'PENDING');
  if (pending) {
    throw rejected(`function '${pending.function}' had not restarted with the new refresh token after ${ROLLOUT_WAIT_MS / 1000} s (revision ${pending.revision}): see its events`);
  }
}

export type ProvisioningActivities = ReturnType<typeof createProvisioningActivities>;
