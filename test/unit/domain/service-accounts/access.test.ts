import fc from 'fast-check';
import type { WorkspaceGrant, WorkspaceRole } from '../../../../domain/principal';
import { serviceAccountAccess, type ServiceAccountTarget } from '../../../../domain/service-accounts/access';

type Caller = Parameters<typeof serviceAccountAccess>[0];

const WORKSPACES = ['a', 'b', 'c'];

function caller(id: string, accountAdmin: boolean, roles: Record<string, WorkspaceRole>): Caller {
  const workspaces = new Map<string, WorkspaceGrant>(Object.entries(roles).map(([name, role]) => [name, { id: `ws-${name}`, name, role }]));
  return { id, accountAdmin, workspaces };
}

function target(id: string, accountAdmin: boolean, roles: Record<string, WorkspaceRole>): ServiceAccountTarget {
  return { id, accountAdmin, memberships: Object.entries(roles).map(([workspace, role]) => ({ workspace, role })) };
}

describe('who may see and manage a service account', () => {
  test('itself and account admins manage it; a stranger does not see it', () => {
    expect(serviceAccountAccess(caller('sa-1', false, {}), target('sa-1', false, { a: 'member' }))).toBe('manage');
    expect(serviceAccountAccess(caller('sa-2', true, {}), target('sa-1', true, { a: 'admin' }))).toBe('manage');
    expect(serviceAccountAccess(caller('sa-2', false, { b: 'admin' }), target('sa-1', false, { a: 'member' }))).toBe('none');
  });

  test('a member of a shared workspace sees it; an admin of one manages it, unless it is an account admin', () => {
    expect(serviceAccountAccess(caller('sa-2', false, { a: 'member' }), target('sa-1', false, { a: 'member' }))).toBe('view');
    expect(serviceAccountAccess(caller('sa-2', false, { a: 'admin' }), target('sa-1', false, { a: 'member' }))).toBe('manage');
    expect(serviceAccountAccess(caller('sa-2', false, { a: 'admin' }), target('sa-1', true, { a: 'member' }))).toBe('view');
    // The admin role counts in a workspace both share, not in another one.
    expect(serviceAccountAccess(caller('sa-2', false, { a: 'member', b: 'admin' }), target('sa-1', false, { a: 'member' }))).toBe('view');
  });

  test('over any memberships: no one but itself or an account admin manages an account admin, and sharing no workspace hides it', () => {
    const roles = fc.dictionary(fc.constantFrom(...WORKSPACES), fc.constantFrom<WorkspaceRole>('admin', 'member'));
    fc.assert(
      fc.property(fc.boolean(), roles, fc.boolean(), roles, fc.boolean(), (callerIsAdmin, callerRoles, targetIsAdmin, targetRoles, self) => {
        const me = caller('sa-me', callerIsAdmin, callerRoles);
        const access = serviceAccountAccess(me, target(self ? 'sa-me' : 'sa-other', targetIsAdmin, targetRoles));
        const shares = Object.keys(targetRoles).some((name) => name in callerRoles);
        if (self || callerIsAdmin) expect(access).toBe('manage');
        else if (!shares) expect(access).toBe('none');
        else if (targetIsAdmin) expect(access).toBe('view');
        else expect(access).toBe(Object.keys(targetRoles).some((name) => callerRoles[name] === 'admin') ? 'manage' : 'view');
      }),
    );
  });
});
