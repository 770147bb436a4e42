import { ApiError, notFound } from '../../domain/errors';
import type { RouteCache, SandboxRoute } from './route-cache';

/** A sandbox, named in its workspace, as the gateway found it. */
export interface AddressedSandbox {
  workspaceId: string;
  name: string;
  route: SandboxRoute;
}

/** Why a sandbox that does not run answers no request, as the JSON error the client gets. */
function notServing(name: string, route: SandboxRoute): ApiError {
  if (route.status === 'FAILED') {
    return new ApiError(503, 'sandbox_failed', `sandbox '${name}' failed to start${route.reason ? `: ${route.reason}` : ''}`);
  }
  return new ApiError(503, 'sandbox_unavailable', `sandbox '${name}' is ${route.status}`);
}

/**
 * The route of a sandbox ready to serve. One still starting (DEPLOYING) is waited for, at most
 * `waitSeconds`: clients create a sandbox and call it at once, so the request is held as one for
 * a sandbox in standby is. The wait follows the resource's notices (NOTIFY, through the route
 * cache) rather than polling; each look registers for the next notice before it reads, so a
 * change between the read and the wait is not missed. A sandbox that failed answers its failure
 * at once; the bound reached answers 504 saying so.
 */
export async function readySandbox(routes: RouteCache, sandbox: AddressedSandbox, waitSeconds: number): Promise<SandboxRoute> {
  const { resourceId, status } = sandbox.route;
  if (status === 'DEPLOYED') return sandbox.route;
  if (status !== 'DEPLOYING') throw notServing(sandbox.name, sandbox.route);
  const bound = new AbortController();
  const timer = setTimeout(() => bound.abort(), waitSeconds * 1000);
  try {
    for (;;) {
      const looked = new AbortController();
      const next = routes.nextChange(resourceId, AbortSignal.any([bound.signal, looked.signal]));
      const now = await routes.sandbox(sandbox.workspaceId, sandbox.name).catch((err: unknown) => {
        looked.abort();
        throw err;
      });
      if (now?.resourceId === resourceId && now.status === 'DEPLOYING') {
        await next;
        if (bound.signal.aborted) throw startTimeout(sandbox.name, waitSeconds);
        continue;
      }
      looked.abort();
      if (now?.resourceId !== resourceId) throw notFound(`sandbox '${sandbox.name}' was deleted while it started`);
      if (now.status === 'DEPLOYED') return now;
      throw notServing(sandbox.name, now);
    }
  } finally {
    clearTimeout(timer);
  }
}

function startTimeout(name: string, waitSeconds: number): ApiError {
  return new ApiError(504, 'sandbox_start_timeout', `sandbox '${name}' is still starting (DEPLOYING) after ${waitSeconds} s; retry later`);
}
