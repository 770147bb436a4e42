import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { StartPortCallback } from '../runtime/port-event-relay';
import { portCallbackWorkflow, portCallbackWorkflowId, type PortCallbackInput } from '../workflows/port-callback';

export type PortCallbackDelivery = Pick<PortCallbackInput, 'giveUpAfterMs' | 'initialRetryMs' | 'maxRetryIntervalMs' | 'activityTaskQueue'>;

/**
 * What the node's port event relay calls for each event: one delivery workflow, its id the
 * sandbox and the event's key, so an event the relay reads twice (after a crash) is refused.
 */
export function portCallbackStarter(temporal: Client, taskQueue: string, delivery?: PortCallbackDelivery): StartPortCallback {
  return async (sandboxId, event) => {
    try {
      await temporal.workflow.start(portCallbackWorkflow, {
        taskQueue,
        workflowId: portCallbackWorkflowId(sandboxId, event.key),
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        args: [{ sandboxId, event, ...delivery }],
      });
      return 'started';
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      return 'duplicate';
    }
  };
}
