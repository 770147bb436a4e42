import type { Pool } from 'pg';
import { findIntegration } from '../domain/integrations/catalog';
import { boundConnections, functionSpecProblem } from '../domain/integrations/function-binding';
import { PROVIDER_INTEGRATION, isProviderModel, modelSpecProblem } from '../domain/workloads/provider-model';
import { badRequest } from '../domain/errors';
import { connectionIntegrations } from '../store/connections';

type Workspace = { id: string; name: string };

/**
 * The checks a workload spec bound to integration connections gets beyond its schema, on create
 * and update alike, whether it comes from the API or from the provisioning saga: every bound
 * connection exists in the workspace and belongs to an integration that fits the workload.
 */
async function checkBoundConnections(pg: Pool, workspace: Workspace, names: string[], fits: (integration: string) => string | undefined): Promise<void> {
  const integrations = await connectionIntegrations(pg, workspace.id, names);
  for (const name of names) {
    const integration = integrations.get(name);
    if (integration === undefined) throw badRequest(`spec.integrationConnections: connection '${name}' does not exist in workspace '${workspace.name}'`);
    const misfit = fits(integration);
    if (misfit) throw badRequest(`spec.integrationConnections: connection '${name}' is of integration '${integration}', ${misfit}`);
  }
}

/** Functions: consistent MCP types, and connections of integrations that have an MCP server. */
export async function validateFunctionSpec(ctx: { pg: Pool }, workspace: Workspace, spec: Record<string, unknown>): Promise<void> {
  const problem = functionSpecProblem(spec);
  if (problem) throw badRequest(problem);
  await checkBoundConnections(ctx.pg, workspace, boundConnections(spec), (integration) =>
    findIntegration(integration)?.mcp ? undefined : 'which has no MCP server for a function to run',
  );
}

/** Models: a provider model names one connection of the provider integration; a bundle model none. */
export async function validateModelSpec(ctx: { pg: Pool }, workspace: Workspace, spec: Record<string, unknown>): Promise<void> {
  const problem = modelSpecProblem(spec);
  if (problem) throw badRequest(problem);
  if (!isProviderModel(spec)) return;
  await checkBoundConnections(ctx.pg, workspace, boundConnections(spec), (integration) =>
    integration === PROVIDER_INTEGRATION ? undefined : `not '${PROVIDER_INTEGRATION}' (a provider model needs its API_KEY)`,
  );
}
