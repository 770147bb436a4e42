import { nameProblem } from '../names';

/**
 * A tenant key is the customer's own identifier for one of its end users. It becomes part of the
 * names of the connection and the function provisioned for that user, so it follows name rules.
 */
export const TENANT_PATTERN = '^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$';
export const TENANT_MAX_LENGTH = 40;

export const PROVISIONING_STATUSES = ['RUNNING', 'SUCCEEDED', 'FAILED'] as const;
export type ProvisioningStatus = (typeof PROVISIONING_STATUSES)[number];

/** What a finished provisioning hands back: where the tenant's MCP server is. */
export interface ProvisioningResult {
  connectionName: string;
  functionName: string;
  mcpUrl: string;
}

/** The one connection and one function of a tenant: both named `<integration>-<tenant>`. */
export function tenantResourceName(integration: string, tenant: string): string {
  return `${integration}-${tenant}`;
}

export function tenantNameProblem(integration: string, tenant: string): string | undefined {
  if (!new RegExp(TENANT_PATTERN).test(tenant)) {
    return `tenant must be 1 to ${TENANT_MAX_LENGTH} lowercase letters, digits or '-', not starting or ending with '-'`;
  }
  const problem = nameProblem('tenant', tenantResourceName(integration, tenant));
  return problem && `the name '${tenantResourceName(integration, tenant)}' derived from tenant is invalid: ${problem}`;
}

/**
 * One workflow per tenant and integration at a time: started with the USE_EXISTING conflict
 * policy, a second request while one runs joins it instead of provisioning twice.
 */
export function provisioningWorkflowId(workspace: string, integration: string, tenant: string): string {
  return `provision/${workspace}/${integration}/${tenant}`;
}
