import { continueAsNew, patched, proxyActivities, sleep } from '@temporalio/workflow';
import type { NodeLossActivities } from '../activities/node-loss';

/** Fixed id: one watch per deployment. */
export const NODE_LOSS_WATCH_WORKFLOW_ID = 'node-loss-watch';

const { writeOffSandboxesOfLostNodes, tellDeploymentsOfLostNodes } = proxyActivities<NodeLossActivities>({
  startToCloseTimeout: '2 minutes',
  // No attempt limit: while PostgreSQL or Temporal is down the pass waits, then runs again.
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds' },
});

export interface NodeLossWatchInput {
  /** Pause between passes: how long after a node is LOST its sandboxes may still look alive. */
  intervalMs?: number;
}

/** Each pass also tells the deployments whose serving revision is on a LOST node (they move it). */
const DEPLOYMENT_NODE_LOSS_PATCH = 'deployment-node-loss';

// Each pass adds a few history events; a fresh run keeps the history short.
const PASSES_PER_RUN = 250;

/**
 * Every few seconds, forever: writes off the sandboxes of nodes that are LOST, and tells the
 * deployments serving from them (activities/node-loss.ts).
 */
export async function nodeLossWatch(input: NodeLossWatchInput = {}): Promise<void> {
  for (let pass = 0; pass < PASSES_PER_RUN; pass++) {
    await writeOffSandboxesOfLostNodes();
    if (patched(DEPLOYMENT_NODE_LOSS_PATCH)) await tellDeploymentsOfLostNodes();
    await sleep(input.intervalMs ?? 5_000);
  }
  await continueAsNew<typeof nodeLossWatch>(input);
}
