import type { Pool } from 'pg';
import { parseDurationSeconds } from '../../../domain/duration';
import { forbidden, notFound } from '../../../domain/errors';
import type { Principal, WorkspaceGrant, WorkspaceRole } from '../../../domain/principal';
import { serviceAccountAccess } from '../../../domain/service-accounts/access';
import {
  createApiKey,
  createServiceAccount,
  deleteServiceAccount,
  findServiceAccount,
  listApiKeys,
  revokeApiKey,
  type ApiKeyRecord,
  type ServiceAccountRow,
} from '../../../store/service-accounts';

type Caller = Pick<Principal, 'id' | 'clientId' | 'accountId' | 'accountAdmin' | 'workspaces'>;

/**
 * The service account `clientId` of the caller's account, if the caller sees it (404 otherwise,
 * whether it exists or not) and, with `manage`, may manage it (403).
 */
export async function serviceAccountFor(pg: Pool, caller: Caller, clientId: string, manage: boolean): Promise<ServiceAccountRow> {
  const target = await findServiceAccount(pg, caller.accountId, clientId);
  const access = target ? serviceAccountAccess(caller, { id: target.id, accountAdmin: target.account_admin, memberships: target.memberships }) : 'none';
  if (!target || access === 'none') throw notFound(`service account '${clientId}' not found`);
  if (manage && access !== 'manage') throw forbidden(`managing service account '${clientId}' needs the admin role`);
  return target;
}

/** Creates a service account as a member of `workspace`; only an account admin may make an account admin. */
export async function createWorkspaceServiceAccount(
  pg: Pool,
  caller: Caller,
  workspace: WorkspaceGrant,
  request: { name: string; role: WorkspaceRole; accountAdmin?: boolean },
) {
  const accountAdmin = request.accountAdmin === true;
  if (accountAdmin && !caller.accountAdmin) throw forbidden('only an account admin can create an account admin');
  const created = await createServiceAccount(pg, {
    accountId: caller.accountId,
    name: request.name,
    workspaceId: workspace.id,
    role: request.role,
    accountAdmin,
    createdBy: caller.clientId,
  });
  return { ...created, name: request.name, accountAdmin, role: request.role, workspace: workspace.name };
}

export async function removeServiceAccount(pg: Pool, caller: Caller, clientId: string): Promise<ServiceAccountRow> {
  const target = await serviceAccountFor(pg, caller, clientId, true);
  await deleteServiceAccount(pg, target.id);
  return target;
}

/** A new API key of a service account the caller manages, valid for `expiresIn` (a duration) or without end. */
export async function createApiKeyFor(pg: Pool, caller: Caller, clientId: string, request: { name: string; expiresIn?: string }) {
  const target = await serviceAccountFor(pg, caller, clientId, true);
  const seconds = request.expiresIn ? parseDurationSeconds(request.expiresIn) : undefined;
  const expiresAt = seconds === undefined ? null : new Date(Date.now() + seconds * 1000);
  return createApiKey(pg, target.id, request.name, expiresAt);
}

export async function apiKeysOf(pg: Pool, caller: Caller, clientId: string): Promise<ApiKeyRecord[]> {
  return listApiKeys(pg, (await serviceAccountFor(pg, caller, clientId, true)).id);
}

export async function revokeApiKeyOf(pg: Pool, caller: Caller, clientId: string, keyId: string): Promise<ApiKeyRecord> {
  const target = await serviceAccountFor(pg, caller, clientId, true);
  const revoked = await revokeApiKey(pg, target.id, keyId);
  if (!revoked) throw notFound(`API key '${keyId}' not found`);
  return revoked;
}
