import { ApplicationFailure } from '@temporalio/activity';
import type { Pool } from 'pg';
import { nodeTaskQueue, type HangarConfig } from '../domain/config';
import { freeMemoryBytes, nodeState } from '../domain/nodes/node';
import { chooseNode, type PlacementCandidate } from '../domain/nodes/placement';
import { nodeFigures, platformNodes, type PlacementNodeRow } from '../store/nodes';
import { executionNode, moveExecutionNode, placeExecutionNode } from '../store/job-records';

/** Where a piece of work runs: its node and that node's task queue. */
export interface Placement {
  nodeId: string;
  nodeQueue: string;
}

/** What to do about work whose node did not answer: go on where it was, wait, or run it here now. */
export type NodeLossVerdict = { do: 'retry' } | { do: 'wait'; reason: string } | { do: 'moved'; to: Placement };

/** A node's row as placement judges it, silent past `lostAfterSeconds`: LOST; sandboxes placed since its report count against its memory. */
export function placementCandidate(row: PlacementNodeRow, lostAfterSeconds: number): PlacementCandidate {
  const { capacity, load } = nodeFigures(row);
  return {
    id: row.id,
    taskQueue: row.task_queue,
    region: row.region,
    state: nodeState(row.silent_seconds, lostAfterSeconds),
    drained: row.drained_at !== null,
    freeMemoryBytes: freeMemoryBytes(capacity, { ...load, memoryCommittedBytes: load.memoryCommittedBytes + Number(row.pending_memory_bytes) }),
  };
}

/**
 * Placement of job executions on the platform's nodes (domain/nodes/placement.ts), from the
 * control worker. Each choice is written to the execution's row with a compare-and-set, so a
 * retried activity answers the choice already made rather than placing twice.
 */
export function createNodePlacementActivities({ pg, config }: { pg: Pool; config: HangarConfig }) {
  const placement = (nodeId: string): Placement => ({ nodeId, nodeQueue: nodeTaskQueue({ taskQueue: config.taskQueue, nodeId }) });
  const candidates = async () => (await platformNodes(pg, config.taskQueue)).map((row) => placementCandidate(row, config.nodeLostSeconds));

  return {
    /** The execution's node: the one recorded, or the best READY one now (retried until there is one). */
    async placeJobExecution(executionRowId: string): Promise<Placement> {
      const recorded = await executionNode(pg, executionRowId);
      if (recorded) return placement(recorded);
      const chosen = chooseNode(await candidates());
      if (!chosen) throw ApplicationFailure.retryable('no node is READY and undrained: the execution waits for one', 'NoNodeAvailable');
      return placement(await placeExecutionNode(pg, executionRowId, chosen.id));
    },

    /**
     * After its node failed to run a part of the execution: the same node again while it is
     * READY (the failure was not the node's), a wait while it is UNREACHABLE (it may come back,
     * with the work still running there), and once it is LOST another node (recorded, unless
     * another part of the execution moved it first: then where that one went).
     */
    async moveJobExecutionOffLostNode(executionRowId: string, fromNodeId: string): Promise<NodeLossVerdict> {
      const recorded = await executionNode(pg, executionRowId);
      if (recorded && recorded !== fromNodeId) return { do: 'moved', to: placement(recorded) };
      const nodes = await candidates();
      const from = nodes.find((node) => node.id === fromNodeId);
      if (from?.state === 'READY') return { do: 'retry' };
      if (from?.state === 'UNREACHABLE') return { do: 'wait', reason: `node '${fromNodeId}' is UNREACHABLE` };
      const chosen = chooseNode(nodes, { exclude: [fromNodeId] });
      if (!chosen) return { do: 'wait', reason: `node '${fromNodeId}' is lost and no other node is READY` };
      return { do: 'moved', to: placement(await moveExecutionNode(pg, executionRowId, fromNodeId, chosen.id)) };
    },
  };
}

export type NodePlacementActivities = ReturnType<typeof createNodePlacementActivities>;
