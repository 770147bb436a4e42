import type { Principal, WorkspaceRole } from '../principal';

/** What the rules of access need to know of the service account acted on. */
export interface ServiceAccountTarget {
  id: string;
  accountAdmin: boolean;
  memberships: readonly { workspace: string; role: WorkspaceRole }[];
}

/** What a caller may do with a service account: nothing (it does not see it), see it, or manage it (keys, deletion). */
export type ServiceAccountAccess = 'none' | 'view' | 'manage';

/**
 * A service account is visible to itself, to account admins and to members of a workspace it
 * belongs to; it is managed (keys, deletion) by itself, account admins, and admins of one of its
 * workspaces, except that only account admins manage an account admin: otherwise a workspace
 * admin could mint a key for a more powerful identity.
 */
export function serviceAccountAccess(caller: Pick<Principal, 'id' | 'accountAdmin' | 'workspaces'>, target: ServiceAccountTarget): ServiceAccountAccess {
  const sharesWorkspace = (role?: 'admin') =>
    target.memberships.some((membership) => {
      const mine = caller.workspaces.get(membership.workspace);
      return mine !== undefined && (!role || mine.role === role);
    });
  const self = target.id === caller.id;
  if (!(self || caller.accountAdmin || sharesWorkspace())) return 'none';
  if (self || caller.accountAdmin || (sharesWorkspace('admin') && !target.accountAdmin)) return 'manage';
  return 'view';
}
