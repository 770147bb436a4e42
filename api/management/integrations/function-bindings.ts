import type { Pool } from 'pg';
import { boundConnections, functionSpecProblem } from '../../../core/integrations/function-binding';
import { badRequest } from '../../errors';
import { existingConnections } from './connection-store';

/**
 * The check a function spec gets beyond its schema, on create and update alike, whether it comes
 * from the API or from the provisioning saga: consistent MCP types, and every bound integration
 * connection existing in the workspace.
 */
export async function validateFunctionSpec(ctx: { pg: Pool }, workspace: { id: string; name: string }, spec: Record<string, unknown>): Promise<void> {
  const problem = functionSpecProblem(spec);
  if (problem) throw badRequest(problem);
  const names = boundConnections(spec);
  const existing = await existingConnections(ctx.pg, workspace.id, names);
  const missing = names.find((name) => !existing.has(name));
  if (missing !== undefined) {
    throw badRequest(`spec.integrationConnections: connection '${missing}' does not exist in workspace '${workspace.name}'`);
  }
}
