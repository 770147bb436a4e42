import { ActivityFailure, ApplicationFailure, TimeoutFailure, proxyActivities } from '@temporalio/workflow';
import type { CallbackActivities } from '../activities/callback';
import type { PortEvent } from '../sandbox-agent/port-events';

export interface PortCallbackInput {
  sandboxId: string;
  event: PortEvent;
  /** Delivery stops trying after this long in total (default one hour). */
  giveUpAfterMs?: number;
  /** First pause between attempts; it doubles up to maxRetryIntervalMs. */
  initialRetryMs?: number;
  maxRetryIntervalMs?: number;
  /**
   * Task queue of the worker that sends the POST, when not the workflow's own: the workflow
   * may run on the control worker while the node's worker calls out from the sandbox's host.
   */
  activityTaskQueue?: string;
}

export interface PortCallbackOutcome {
  delivered: boolean;
  /** HTTP status of the successful answer. */
  status?: number;
  /** Why delivery was given up. */
  error?: string;
}

/** Business keys in the id: the sandbox and the event's idempotency key. Starting it twice is refused. */
export function portCallbackWorkflowId(sandboxId: string, key: string): string {
  return `port-callback/${sandboxId}/${key}`;
}

/**
 * Delivers one detected port to its callback: POSTs until the target answers 2xx, with
 * exponential backoff between attempts (the activity's retry policy), for a bounded time. A
 * target refusing the event for good (a 4xx other than 408 and 429) ends it at once. When
 * delivery is given up, the failure is recorded and returned, so the history says why.
 */
export async function portCallbackWorkflow(input: PortCallbackInput): Promise<PortCallbackOutcome> {
  const { deliverPortCallback } = proxyActivities<CallbackActivities>({
    taskQueue: input.activityTaskQueue,
    startToCloseTimeout: '15 seconds',
    scheduleToCloseTimeout: input.giveUpAfterMs ?? 3_600_000,
    retry: {
      initialInterval: input.initialRetryMs ?? 1_000,
      backoffCoefficient: 2,
      maximumInterval: input.maxRetryIntervalMs ?? 60_000,
      nonRetryableErrorTypes: ['CallbackRejected'],
    },
  });
  const { recordPortCallbackFailure } = proxyActivities<CallbackActivities>({
    taskQueue: input.activityTaskQueue,
    startToCloseTimeout: '30 seconds',
    retry: { maximumAttempts: 10 },
  });
  try {
    const { status } = await deliverPortCallback(input.event);
    return { delivered: true, status };
  } catch (err) {
    const error = failureReason(err);
    await recordPortCallbackFailure({ sandboxId: input.sandboxId, event: input.event, error, failedAt: new Date().toISOString() });
    return { delivered: false, error };
  }
}

function failureReason(err: unknown): string {
  if (err instanceof ActivityFailure) {
    const cause = err.cause;
    if (cause instanceof TimeoutFailure) {
      const last = cause.cause?.message;
      return `gave up: no success within the delivery time${last ? `; last error: ${last}` : ''}`;
    }
    // A retryable failure that ended the activity means the delivery time ran out.
    if (cause instanceof ApplicationFailure) return cause.nonRetryable ? cause.message : `gave up: no success within the delivery time; last error: ${cause.message}`;
    return cause?.message ?? err.message;
  }
  return (err as Error).message;
}
