import { proxyActivities } from '@temporalio/workflow';
import type { CallbackActivities } from '../activities/callback';
import type { PortEvent } from '../sandbox-agent/contract/port-events';
import { callbackDeliveryActivityOptions, deliveryFailureReason, type CallbackDeliveryOptions } from './callback-delivery';

export interface PortCallbackInput extends CallbackDeliveryOptions {
  sandboxId: string;
  event: PortEvent;
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
  const { deliverPortCallback } = proxyActivities<CallbackActivities>(callbackDeliveryActivityOptions(input));
  const { recordPortCallbackFailure } = proxyActivities<CallbackActivities>({
    taskQueue: input.activityTaskQueue,
    startToCloseTimeout: '30 seconds',
    retry: { maximumAttempts: 10 },
  });
  try {
    const { status } = await deliverPortCallback(input.event);
    return { delivered: true, status };
  } catch (err) {
    const error = deliveryFailureReason(err);
    await recordPortCallbackFailure({ sandboxId: input.sandboxId, event: input.event, error, failedAt: new Date().toISOString() });
    return { delivered: false, error };
  }
}
