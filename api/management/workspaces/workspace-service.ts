import type { Pool } from 'pg';
import { conflict, forbidden, notFound } from '../../../domain/errors';
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

/** Changes display name or labels of a workspace the caller administers. */
export async function changeWorkspace(pg: Pool, caller: Caller, name: string, change: { displayName?: string; labels?: Record<string, string> }): Promise<WorkspaceRow> {
  const current = await visibleWorkspace(pg, caller, name);
  if (caller.workspaces.get(current.name)?.role !== 'admin') {
    throw forbidden(`updating workspace '${current.name}' needs the admin role in it`);
  }
  return updateWorkspace(pg, current.id, { ...change, actor: caller.clientId });
}

/** Deletes a workspace and everything in it (account admins only); the row as it was. */
export async function removeWorkspace(pg: Pool, caller: Caller, name: string): Promise<WorkspaceRow> {
  const current = await visibleWorkspace(pg, caller, name);
  requireAccountAdmin(caller);
  await deleteWorkspace(pg, current.id);
  return current;
}
