import type { Client } from '@temporalio/client';
import type { ResourceStore } from '../../../store/resources';

/**
 * Starts the workflow that drives a resource just inserted as DEPLOYING. Without its workflow the
 * row would stay DEPLOYING forever, so a failed start takes the row back before rethrowing.
 */
export async function startOwningWorkflow(store: ResourceStore, rowId: string, start: () => Promise<unknown>): Promise<void> {
  try {
    await start();
  } catch (err) {
    await store.deleteById(rowId);
    throw err;
  }
}

/**
 * Signals `delete` to the resource's running workflow, or starts one in its delete phase if it is
 * gone. `W` is the workflow's function, so that `input` is checked against what it takes.
 */
export async function deleteThroughWorkflow<W extends (input: never) => Promise<unknown>>(
  temporal: Client,
  workflowType: string,
  options: { taskQueue: string; workflowId: string; input: Parameters<W>[0] },
): Promise<void> {
  const { taskQueue, workflowId, input } = options;
  await temporal.workflow.signalWithStart(workflowType, { taskQueue, workflowId, args: [input], signal: 'delete', signalArgs: [] });
}
