import type { FastifyRequest } from 'fastify';
import type { WorkspaceGrant, WorkspaceRole } from '../../domain/principal';
import { ApiError, badRequest, forbidden } from '../../domain/errors';

/**
 * The workspace a request acts in: the X-Service-Workspace header, or the caller's only workspace
 * when it belongs to exactly one. A workspace the caller does not belong to gets the same answer
 * whether it exists or not, so names of other tenants' workspaces do not leak.
 */
export function requestWorkspace(request: FastifyRequest, minimumRole: WorkspaceRole = 'member'): WorkspaceGrant {
  const principal = request.principal;
  const header = request.headers['x-service-workspace'];
  const name = (Array.isArray(header) ? header[0] : header)?.trim();
  let grant: WorkspaceGrant | undefined;
  if (name) {
    grant = principal.workspaces.get(name);
    if (!grant) throw new ApiError(403, 'access_denied', `workspace '${name}' does not exist or you are not a member of it`);
  } else {
    if (principal.workspaces.size !== 1) {
      throw badRequest('the X-Service-Workspace header is required: name the workspace to act in');
    }
    grant = [...principal.workspaces.values()][0];
  }
  if (minimumRole === 'admin' && grant.role !== 'admin') {
    throw forbidden(`this operation needs the admin role in workspace '${grant.name}'`);
  }
  return grant;
}
