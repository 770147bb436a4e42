/** Roles a caller can hold inside one workspace. */
export type WorkspaceRole = 'admin' | 'member';

export interface WorkspaceGrant {
  id: string;
  name: string;
  role: WorkspaceRole;
}

/**
 * The authenticated caller of a request, resolved once by the auth plugin from an API key or a
 * JWT. Route handlers decide access from this alone.
 */
export interface Principal {
  /** Service account id (internal). */
  id: string;
  /** Public identifier of the service account, used as the OAuth client id. */
  clientId: string;
  name: string;
  accountId: string;
  /** Account admins act on every workspace of their account with the admin role. */
  accountAdmin: boolean;
  /** Workspaces the caller belongs to, by workspace name. Account admins hold every workspace. */
  workspaces: Map<string, WorkspaceGrant>;
  /** How the credential was presented. */
  credential: 'api_key' | 'jwt';
}

export function workspaceRole(principal: Principal, workspace: string): WorkspaceRole | undefined {
  return principal.workspaces.get(workspace)?.role;
}
