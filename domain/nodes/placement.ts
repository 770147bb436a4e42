import type { NodeState } from './node';

/** A node as placement sees it. */
export interface PlacementCandidate {
  id: string;
  taskQueue: string;
  region: string;
  state: NodeState;
  drained: boolean;
  freeMemoryBytes: number;
}

export interface PlacementRequest {
  /** Only nodes of this region (none: any). */
  region?: string;
  /** Nodes not to use (the one being moved away from). */
  exclude?: readonly string[];
}

/**
 * The node new work goes to: among the READY, undrained nodes of the region, the one with the
 * most free memory (its total less its sandboxes' limits), ties to the first id so the choice is
 * the same however the list is ordered. Memory limits are limits, not reservations, so a node
 * with less free memory than the work asks for may still be the best there is; none eligible:
 * undefined (the caller waits for one).
 */
export function chooseNode(candidates: readonly PlacementCandidate[], request: PlacementRequest = {}): PlacementCandidate | undefined {
  const eligible = candidates.filter(
    (node) => node.state === 'READY' && !node.drained && (request.region === undefined || node.region === request.region) && !request.exclude?.includes(node.id),
  );
  return eligible.reduce<PlacementCandidate | undefined>((best, node) => {
    if (!best || node.freeMemoryBytes > best.freeMemoryBytes) return node;
    return node.freeMemoryBytes === best.freeMemoryBytes && node.id < best.id ? node : best;
  }, undefined);
}
