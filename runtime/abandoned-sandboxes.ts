import type { Pool } from 'pg';
import { abandonedSandboxes, forgetAbandonedSandbox } from '../store/abandoned-sandboxes';
import type { SandboxRuntime } from './sandbox-runtime';

/**
 * Removes the sandboxes the platform wrote off while this node was LOST (store/abandoned-sandboxes.ts):
 * the node worker does this before it takes work, so a node coming back never runs them again.
 * Each is forgotten only once removed: a crash half-way removes the rest at the next start.
 * Answers the ids it removed (those no longer on disk included).
 */
export async function removeAbandonedSandboxes(runtime: Pick<SandboxRuntime, 'remove'>, pg: Pool, nodeId: string): Promise<string[]> {
  const ids = await abandonedSandboxes(pg, nodeId);
  for (const id of ids) {
    await runtime.remove(id);
    await forgetAbandonedSandbox(pg, nodeId, id);
  }
  return ids;
}
