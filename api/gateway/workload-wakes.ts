import { WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError, type Client as TemporalClient } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { WorkloadKind } from '../../domain/workloads/workload';
import { ApiError } from '../../domain/errors';
import type { RouteCache } from './route-cache';
import type { WorkflowTouches } from '../../store/workflow-touches';

/**
 * The run gateway's starts of workloads scaled to zero, by resource id: requests that arrive
 * while one starts share it.
 */
export class WorkloadWakes {
  private readonly wakes = new Map<string, Promise<string>>();

  constructor(private readonly deps: { temporal: TemporalClient; routes: RouteCache; touches: WorkflowTouches; timeoutSeconds: number }) {}

  /**
   * Asks the deployment workflow to start a workload scaled to zero and waits, at most the wake
   * timeout, for the socket to forward to. The workflow owns the state, so a start survives a
   * gateway or worker restart; a request that outwaits the timeout gets 504, a failed start 503.
   * The node announces the start itself (NOTIFY) a workflow task before the update answers:
   * whichever comes first lets the requests through.
   */
  wake(resourceId: string, key: { workspaceId: string; kind: WorkloadKind; name: string }, workflowId: string, what: string): Promise<string> {
    const { temporal, routes, touches, timeoutSeconds } = this.deps;
    let waking = this.wakes.get(resourceId);
    if (!waking) {
      const deadline = Date.now() + timeoutSeconds * 1000;
      const settled = new AbortController();
      const announced = async (): Promise<string> => {
        for (;;) {
          await routes.nextChange(resourceId, settled.signal);
          if (settled.signal.aborted) return new Promise<string>(() => undefined);
          // A failed look leaves the update to answer.
          const now = await routes.lookup(key.workspaceId, key.kind, key.name).catch(() => undefined);
          if (now?.scale === 'RUNNING' && now.socketPath) return now.socketPath;
        }
      };
      const answered = temporal.withDeadline(deadline, () => temporal.workflow.getHandle(workflowId).executeUpdate<string, []>('wake'));
      // The update's outcome is always observed: a late failure after an announced start is moot.
      answered.catch(() => undefined);
      waking = Promise.race([answered, announced()])
        .then((socketPath) => {
          routes.markRunning(resourceId, socketPath);
          touches.noted(workflowId);
          return socketPath;
        })
        .finally(() => {
          settled.abort();
          this.wakes.delete(resourceId);
        });
      this.wakes.set(resourceId, waking);
    }
    return waking.catch((err: Error) => {
      throw wakeError(err, what, timeoutSeconds);
    });
  }
}

/** Why a held request could not be served after all, as the JSON error the client gets. */
function wakeError(err: Error, what: string, timeoutSeconds: number): ApiError {
  if (err instanceof WorkflowUpdateFailedError) {
    return new ApiError(503, 'workload_start_failed', `${what} was scaled to zero and could not start: ${err.cause?.message ?? err.message}`);
  }
  if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) {
    return new ApiError(504, 'workload_start_timeout', `${what} was scaled to zero and did not start within ${timeoutSeconds} s; retry later`);
  }
  if (err instanceof WorkflowNotFoundError) return new ApiError(503, 'workload_unavailable', `${what} has no deployment running`);
  return new ApiError(503, 'workload_unavailable', `${what} was scaled to zero and could not be started: ${err.message}`);
}
