import { ApplicationFailure } from '@temporalio/activity';
import type { Pool } from 'pg';
import { nodeTaskQueue, type HangarConfig } from '../domain/config';
import { chooseNode, type PlacementCandidate } from '../domain/nodes/placement';
import { platformNodes } from '../store/nodes';
import { moveRevisionNode, placeResourceNode, placeRevisionNode, resourceNode, revisionNode } from '../store/resource-nodes';
import { placementCandidate, type Placement } from './node-placement';

/** What decides a sandbox's node: its region, the volumes it mounts, the snapshot it is forked from. */
export interface SandboxPlacementRequest {
  resourceId: string;
  region?: string;
  /** The volumes it mounts, by name and uuid, in spec order. */
  volumes: { name: string; volumeId: string }[];
  seedSnapshotId?: string;
  /** The queue the API gave the workflow: where resources from before placement (no node recorded) are. */
  legacyQueue: string;
}

/** The node a sandbox must go to because its data is there, and what holds it there (for messages). */
interface Pin {
  nodeId: string;
  because: string;
}

/**
 * Placement of sandboxes, volumes and workload revisions (domain/nodes/placement.ts), from the
 * control worker, inside their lifecycle (or deployment) workflows: the choice is written to the resource's row with a compare-and-set
 * (store/resource-nodes.ts), so a retried activity, or two racing, answer the one choice made.
 * Nothing fits: retried until a node does (the resource stays DEPLOYING). A sandbox whose volume
 * or snapshot is on a node that is not READY is refused for good, saying which and why.
 */
export function createResourcePlacementActivities({ pg, config }: { pg: Pool; config: HangarConfig }) {
  const placement = (nodeId: string): Placement => ({ nodeId, nodeQueue: nodeTaskQueue({ taskQueue: config.taskQueue, nodeId }) });
  const candidates = async () => (await platformNodes(pg, config.taskQueue)).map((row) => placementCandidate(row, config.nodeLostSeconds));

  /**
   * Places `resourceId` on the best node of `region` unless it is placed already. A region no
   * node of the platform has (registered at all, whatever its state) names only the sandbox's
   * URL, as on a platform of one machine: the reference SDK sends one whatever the installation.
   */
  async function placeByMemory(resourceId: string, region: string | undefined, what: string): Promise<Placement> {
    return placement(await placeResourceNode(pg, resourceId, await bestNode(region, what)));
  }

  /** The READY undrained node with the most free memory (of `region`, when some node has it); none: retried. */
  async function bestNode(region: string | undefined, what: string): Promise<string> {
    const nodes = await candidates();
    const regional = region !== undefined && nodes.some((node) => node.region === region);
    const chosen = chooseNode(nodes, regional ? { region } : {});
    if (!chosen) throw ApplicationFailure.retryable(`no node${regional ? ` of region '${region}'` : ''} is READY and undrained: the ${what} waits for one`, 'NoNodeAvailable');
    return chosen.id;
  }

  return {
    /**
     * The node a workload revision's instances run on: recorded, else the best by free memory.
     * Revisions of one workload are placed each on their own: the next one may start elsewhere
     * while the one serving keeps serving where it is.
     */
    async placeRevision(request: { resourceId: string; revision: number }): Promise<Placement> {
      const recorded = await revisionNode(pg, request.resourceId, request.revision);
      if (recorded) return placement(recorded);
      const chosen = await bestNode(undefined, `revision ${request.revision}`);
      return placement(await placeRevisionNode(pg, request.resourceId, request.revision, chosen));
    },

    /**
     * Moves a revision off `fromNodeId` if that node is LOST and the revision is still placed
     * there, to the best node by free memory; answers where the revision is. Asked again (a retry,
     * a second signal), it answers the node of the first move.
     */
    async moveRevision(request: { resourceId: string; revision: number; fromNodeId: string }): Promise<Placement> {
      const { resourceId, revision, fromNodeId } = request;
      const recorded = await revisionNode(pg, resourceId, revision);
      if (!recorded) throw ApplicationFailure.nonRetryable(`revision ${revision} is not placed`, 'NotPlaced');
      const from = (await candidates()).find((node) => node.id === fromNodeId);
      if (recorded !== fromNodeId || from?.state !== 'LOST') return placement(recorded);
      const chosen = await bestNode(undefined, `revision ${revision}, whose node '${fromNodeId}' is LOST,`);
      return placement(await moveRevisionNode(pg, resourceId, revision, fromNodeId, chosen));
    },

    async placeVolume(resourceId: string): Promise<Placement> {
      const recorded = await resourceNode(pg, resourceId);
      return recorded ? placement(recorded) : placeByMemory(resourceId, undefined, 'volume');
    },

    /** The sandbox's node: recorded, else its volumes' or snapshot's node (which must be READY), else the best by free memory. */
    async placeSandbox(request: SandboxPlacementRequest): Promise<Placement> {
      const recorded = await resourceNode(pg, request.resourceId);
      if (recorded) return placement(recorded);
      const nodes = await candidates();
      const pin = await sandboxPin(pg, nodes, request);
      if (!pin) return placeByMemory(request.resourceId, request.region, 'sandbox');
      const node = nodes.find((candidate) => candidate.id === pin.nodeId);
      if (node?.state !== 'READY') {
        throw ApplicationFailure.nonRetryable(`${pin.because} is on node '${pin.nodeId}', which is ${node?.state ?? 'not registered'}`, 'NodeNotReady');
      }
      const regional = request.region !== undefined && nodes.some((candidate) => candidate.region === request.region);
      if (regional && node.region !== request.region) {
        throw ApplicationFailure.nonRetryable(`${pin.because} is on node '${pin.nodeId}' of region '${node.region}', not of region '${request.region}'`, 'RegionMismatch');
      }
      return placement(await placeResourceNode(pg, request.resourceId, pin.nodeId));
    },
  };
}

/**
 * Where the sandbox's data is: its volumes' node (all on one, since a sandbox runs on one node)
 * or its snapshot's; undefined when it has neither. A drained node still takes a sandbox of its
 * volume: the drain stops new placements, not the use of what is already there.
 */
async function sandboxPin(pg: Pool, nodes: readonly PlacementCandidate[], request: SandboxPlacementRequest): Promise<Pin | undefined> {
  const legacyNode = nodes.find((node) => node.taskQueue === request.legacyQueue)?.id ?? request.legacyQueue;
  let pin: Pin | undefined;
  for (const volume of request.volumes) {
    const nodeId = (await resourceNode(pg, volume.volumeId)) ?? legacyNode;
    const because = `volume '${volume.name}'`;
    if (pin && pin.nodeId !== nodeId) throw ApplicationFailure.nonRetryable(`${pin.because} is on node '${pin.nodeId}' and ${because} on node '${nodeId}': a sandbox mounts volumes of one node`, 'VolumesOnTwoNodes');
    pin = { nodeId, because };
  }
  if (request.seedSnapshotId) {
    const { rows } = await pg.query<{ node_queue: string }>('SELECT node_queue FROM sandbox_snapshots WHERE id = $1', [request.seedSnapshotId]);
    const queue = rows[0]?.node_queue ?? request.legacyQueue;
    const nodeId = nodes.find((node) => node.taskQueue === queue)?.id ?? queue;
    const because = 'the snapshot it is forked from';
    if (pin && pin.nodeId !== nodeId) throw ApplicationFailure.nonRetryable(`${pin.because} is on node '${pin.nodeId}' and ${because} on node '${nodeId}'`, 'VolumesOnTwoNodes');
    pin ??= { nodeId, because };
  }
  return pin;
}

export type ResourcePlacementActivities = ReturnType<typeof createResourcePlacementActivities>;
