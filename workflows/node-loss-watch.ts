import { continueAsNew, proxyActivities, sleep } from '@temporalio/workflow';
import type { NodeLossActivities } from '../activities/node-loss';

/** Fixed id: one watch per deployment. */
export const NODE_LOSS_WATCH_WORKFLOW_ID = 'node-loss-watch';

const { writeOffSandboxesOfLostNodes } = proxyActivities<NodeLossActivities>({
  startToCloseTimeout: '2 minutes',
  // No attempt limit: while PostgreSQL or Temporal is down the pass waits, then runs again.
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds' },
});

export interface NodeLossWatchInput {
  /** Pause between passes: how long after a node is LOST its sandboxes may still look alive. */
  intervalMs?: number;
}

// Each pass adds a few history events; a fresh run keeps the history short.
const PASSES_PER_RUN = 250;

/** Writes off, every few seconds, the sandboxes of nodes that are LOST (activities/node-loss.ts), forever. */
export async function nodeLossWatch(input: NodeLossWatchInput = {}): Promise<void> {
  for (let pass = 0; pass < PASSES_PER_RUN; pass++) {
    await writeOffSandboxesOfLostNodes();
    await sleep(input.intervalMs ?? 5_000);
  }
  await continueAsNew<typeof nodeLossWatch>(input);
}
