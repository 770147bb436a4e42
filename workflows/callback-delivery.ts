import { ActivityFailure, ApplicationFailure, TimeoutFailure, type ActivityOptions } from '@temporalio/workflow';

/** How long and how often a workflow tries to deliver a callback. */
export interface CallbackDeliveryOptions {
  /** Delivery stops trying after this long in total (default one hour). */
  giveUpAfterMs?: number;
  /** First pause between attempts; it doubles up to maxRetryIntervalMs. */
  initialRetryMs?: number;
  maxRetryIntervalMs?: number;
  /**
   * Task queue of the worker that sends the POST, when not the workflow's own: the workflow
   * may run on the control worker while a node's worker calls out from that host.
   */
  activityTaskQueue?: string;
}

/**
 * Activity options for one delivery activity (see postCallback): exponential backoff between
 * attempts for a bounded time; a target refusing the callback for good ends it at once.
 */
export function callbackDeliveryActivityOptions(options: CallbackDeliveryOptions): ActivityOptions {
  return {
    taskQueue: options.activityTaskQueue,
    startToCloseTimeout: '15 seconds',
    scheduleToCloseTimeout: options.giveUpAfterMs ?? 3_600_000,
    retry: {
      initialInterval: options.initialRetryMs ?? 1_000,
      backoffCoefficient: 2,
      maximumInterval: options.maxRetryIntervalMs ?? 60_000,
      nonRetryableErrorTypes: ['CallbackRejected'],
    },
  };
}

/** Why a delivery activity ended without success, in words for the record. */
export function deliveryFailureReason(err: unknown): string {
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
