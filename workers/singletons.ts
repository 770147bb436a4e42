import type { Client } from '@temporalio/client';
import type { HangarConfig } from '../domain/config';
import { NODE_LOSS_WATCH_WORKFLOW_ID, nodeLossWatch } from '../workflows/node-loss-watch';
import { USAGE_FLUSH_WORKFLOW_ID, usageFlushWorkflow } from '../workflows/usage-flush';

/**
 * Long-lived workflows the platform keeps exactly one of (per deployment). Starting them is
 * idempotent: their ids are fixed, so every worker start may ask and only the first one starts.
 */
export async function startSingletonWorkflows(client: Client, config: HangarConfig): Promise<void> {
  // Moves accepted usage events from the PostgreSQL outbox to ClickHouse.
  await startUsageFlush(client, config.taskQueue);
  // Writes off the sandboxes of nodes that are LOST.
  await startNodeLossWatch(client, config.taskQueue);
}

/**
 * Starts the deployment's flush workflow unless it already runs (called at every worker start).
 * Tests pass their own workflow id and task queue.
 */
export async function startUsageFlush(
  client: Client,
  taskQueue: string,
  options: { workflowId?: string; idleMs?: number } = {},
): Promise<void> {
  await client.workflow.start(usageFlushWorkflow, {
    workflowId: options.workflowId ?? USAGE_FLUSH_WORKFLOW_ID,
    taskQueue,
    args: [{ idleMs: options.idleMs }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
}

/** Starts the deployment's node loss watch unless it already runs. Tests pass their own workflow id and task queue. */
export async function startNodeLossWatch(client: Client, taskQueue: string, options: { workflowId?: string; intervalMs?: number } = {}): Promise<void> {
  await client.workflow.start(nodeLossWatch, {
    workflowId: options.workflowId ?? NODE_LOSS_WATCH_WORKFLOW_ID,
    taskQueue,
    args: [{ intervalMs: options.intervalMs }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
}
