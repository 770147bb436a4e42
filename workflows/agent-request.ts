import { ActivityFailure, ApplicationFailure, patched, proxyActivities, sleep, upsertSearchAttributes } from '@temporalio/workflow';
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

/**
 * The agent is called on the node its serving revision is placed on at each attempt, not on the
 * one it was on when the request was accepted: a request in flight on a node that is lost runs
 * again on the revision's new node (at least once). The callback leaves from the node of the call.
 */
const FOLLOW_AGENT_NODE_PATCH = 'agent-request-follows-node';
/** Attempts at the call, as the retry policy of the unpatched path allows. */
const CALL_ATTEMPTS = 8;
const NON_RETRYABLE = ['AgentGone', 'AgentRequestGone'];

type NodeCalls = ReturnType<typeof proxyActivities<AgentRequestNodeActivities>>;

/** The node activities on `taskQueue`, each attempt its own (the workflow retries, choosing the node again). */
function callOn(taskQueue: string): NodeCalls {
  return proxyActivities<AgentRequestNodeActivities>({
    taskQueue,
    startToCloseTimeout: '15 minutes',
    heartbeatTimeout: '10s',
    // A queue nobody polls (its node is gone) fails the attempt instead of holding it for ever.
    scheduleToStartTimeout: '30s',
    retry: { maximumAttempts: 1 },
  });
}

/**
 * Calls the agent on its serving revision's node, choosing the node again before each attempt;
 * transient failures are retried with backoff, up to CALL_ATTEMPTS. Answers the outcome and the
 * queue of the node that gave it.
 */
async function callAgentFollowingNode(input: AgentRequestInput, control: ReturnType<typeof proxyActivities<AgentRequestControlActivities>>) {
  for (let attempt = 1; ; attempt++) {
    const queue = (await control.agentNodeQueue(input.key)) ?? input.nodeQueue;
    try {
      return { ...(await callOn(queue).callAgent(input.key)), queue };
    } catch (err) {
      const type = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause.type : undefined;
      if (attempt >= CALL_ATTEMPTS || (type && NON_RETRYABLE.includes(type))) throw err;
      await sleep(Math.min(1_000 * 2 ** (attempt - 1), 30_000));
    }
  }
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
    retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 8, nonRetryableErrorTypes: NON_RETRYABLE },
  });

  await control.meterAgentRequest(key, input.acceptedAt);
  let status: AgentRequestStatus;
  let callbackQueue = input.nodeQueue;
  try {
    if (patched(FOLLOW_AGENT_NODE_PATCH)) ({ status, queue: callbackQueue } = await callAgentFollowingNode(input, control));
    else ({ status } = await node.callAgent(key));
  } catch (err) {
    status = 'failed';
    const error = err instanceof ActivityFailure ? (err.cause?.message ?? err.message) : (err as Error).message;
    await control.failAgentRequest(key.id, `the agent could not be called: ${error}`);
  }
  if (!input.hasCallback) return { status };
  const delivery = proxyActivities<AgentRequestNodeActivities>(callbackDeliveryActivityOptions({ ...input.delivery, activityTaskQueue: callbackQueue }));
  try {
    await delivery.deliverAgentRequestCallback(key);
    await control.recordAgentRequestCallback(key.id, { delivered: true });
    return { status, callback: 'delivered' };
  } catch (err) {
    await control.recordAgentRequestCallback(key.id, { delivered: false, error: deliveryFailureReason(err) });
    return { status, callback: 'failed' };
  }
}
