import type { Pool } from 'pg';
import { badRequest, conflict, forbidden, notFound } from '../../../domain/errors';
import { networkSpecProblem, networkUnavailableProblem, type SandboxNetworkSpec } from '../../../domain/sandbox/network-policy';
import type { Principal } from '../../../domain/principal';
import { isUniqueViolation } from '../../../store/pg-errors';
import { deleteWorkspace, getWorkspace, insertWorkspace, listWorkspaces, updateWorkspace, type WorkspaceRow } from '../../../store/workspaces';

type Caller = Pick<Principal, 'clientId' | 'accountId' | 'accountAdmin' | 'workspaces'>;

function requireAccountAdmin(caller: Caller): void {
  if (!caller.accountAdmin) throw forbidden('this operation needs the account admin role');
}

/** The workspace row if the caller belongs to it; the same 404 whether it exists or not. */
export async function visibleWorkspace(pg: Pool, caller: Caller, name: string): Promise<WorkspaceRow> {
  const grant = caller.workspaces.get(name);
  const row = grant ? await getWorkspace(pg, grant.id) : undefined;
  if (!row) throw notFound(`workspace '${name}' not found`);
  return row;
}

export function callerWorkspaces(pg: Pool, caller: Caller): Promise<WorkspaceRow[]> {
  return listWorkspaces(pg, [...caller.workspaces.values()].map((grant) => grant.id));
}

/** Creates a workspace of the caller's account (account admins only); a name already taken is a 409. */
export async function createWorkspace(pg: Pool, caller: Caller, request: { name: string; displayName?: string; labels?: Record<string, string> }): Promise<WorkspaceRow> {
  requireAccountAdmin(caller);
  const { name } = request;
  try {
    return await insertWorkspace(pg, { accountId: caller.accountId, name, displayName: request.displayName ?? name, labels: request.labels ?? {}, actor: caller.clientId });
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`workspace '${name}' already exists`);
    throw err;
  }
}

export interface WorkspaceChange {
  displayName?: string;
  labels?: Record<string, string>;
  /** The default `spec.network` of its new sandboxes; null removes it. */
  defaultSandboxNetwork?: SandboxNetworkSpec | null;
}

/**
 * Changes display name, labels or the default sandbox network of a workspace the caller
 * administers. A default is checked as a sandbox's own `spec.network` is (`networkOn`: whether
 * the platform's nodes give sandboxes outbound network at all).
 */
export async function changeWorkspace(pg: Pool, caller: Caller, name: string, change: WorkspaceChange, networkOn: boolean): Promise<WorkspaceRow> {
  const current = await visibleWorkspace(pg, caller, name);
  if (caller.workspaces.get(current.name)?.role !== 'admin') {
    throw forbidden(`updating workspace '${current.name}' needs the admin role in it`);
  }
  const network = change.defaultSandboxNetwork ?? undefined;
  const problem = networkSpecProblem(network, 'body.defaultSandboxNetwork') ?? networkUnavailableProblem(network, networkOn, 'body.defaultSandboxNetwork');
  if (problem) throw badRequest(problem);
  return updateWorkspace(pg, current.id, { ...change, actor: caller.clientId });
}

/** Deletes a workspace and everything in it (account admins only); the row as it was. */
export async function removeWorkspace(pg: Pool, caller: Caller, name: string): Promise<WorkspaceRow> {
  const current = await visibleWorkspace(pg, caller, name);
  requireAccountAdmin(caller);
  await deleteWorkspace(pg, current.id);
  return current;
}
