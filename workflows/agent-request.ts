import { ActivityFailure, proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { AgentRequestControlActivities } from '../activities/agent-request-control';
import type { AgentRequestNodeActivities } from '../activities/agent-request-node';
import type { AgentRequestKey, AgentRequestStatus, CallbackStatus } from '../domain/agents/async-requests';
import { callbackDeliveryActivityOptions, deliveryFailureReason, type CallbackDeliveryOptions } from './callback-delivery';

export interface AgentRequestInput {
  key: AgentRequestKey;
  /** Task queue of the node the agent serves on: the call and the callback leave from there. */
  nodeQueue: string;
  /** When the gateway accepted the request (epoch ms): the meter's timestamp. */
  acceptedAt: number;
  hasCallback: boolean;
  delivery?: Omit<CallbackDeliveryOptions, 'activityTaskQueue'>;
}

export interface AgentRequestOutcome {
  status: AgentRequestStatus;
  callback?: Exclude<CallbackStatus, 'pending'>;
}

/**
 * One async agent request, `agent-request/<workspace>/<agent>/<id>`: meter it, call the agent
 * (transient failures retried with backoff, a bounded number of times), record the outcome, then
 * deliver the signed result to the callback, if one was given, for a bounded time. Every step is
 * idempotent on the request id, so a worker dying anywhere neither loses nor doubles an outcome.
 */
export async function agentRequest(input: AgentRequestInput): Promise<AgentRequestOutcome> {
  const { key } = input;
  upsertSearchAttributes({ HangarWorkspace: [key.workspace], HangarResourceKind: ['agents'], HangarResourceName: [key.agentName] });
  const control = proxyActivities<AgentRequestControlActivities>({
    startToCloseTimeout: '30s',
    retry: { initialInterval: '200ms', maximumInterval: '10s' },
  });
  const node = proxyActivities<AgentRequestNodeActivities>({
    taskQueue: input.nodeQueue,
    // Agents may think for long; a dead worker is noticed by the missing heartbeat instead.
    startToCloseTimeout: '15 minutes',
    heartbeatTimeout: '10s',
    retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 8, nonRetryableErrorTypes: ['AgentGone', 'AgentRequestGone'] },
  });
  const delivery = proxyActivities<AgentRequestNodeActivities>(callbackDeliveryActivityOptions({ ...input.delivery, activityTaskQueue: input.nodeQueue }));

  await control.meterAgentRequest(key, input.acceptedAt);
  let status: AgentRequestStatus;
  try {
    ({ status } = await node.callAgent(key));
  } catch (err) {
    status = 'failed';
    const error = err instanceof ActivityFailure ? (err.cause?.message ?? err.message) : (err as Error).message;
    await control.failAgentRequest(key.id, `the agent could not be called: ${error}`);
  }
  if (!input.hasCallback) return { status };
  try {
    await delivery.deliverAgentRequestCallback(key);
    await control.recordAgentRequestCallback(key.id, { delivered: true });
    return { status, callback: 'delivered' };
  } catch (err) {
    await control.recordAgentRequestCallback(key.id, { delivered: false, error: deliveryFailureReason(err) });
    return { status, callback: 'failed' };
  }
}
