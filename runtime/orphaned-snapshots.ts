import type { Pool } from 'pg';
import { SandboxSnapshotStore } from '../store/sandbox-snapshots';
import { storedSnapshotIds } from './layout';

/**
 * Removes the files of snapshots that no longer exist: the node begins a capture on a snapshot's
 * announcement, before its workflow has started, and when that start then fails the API deletes
 * the row, leaving no workflow to remove the copy. The node worker does this at its start, before
 * it takes work (no capture of its own is under way then). Answers the ids it removed.
 */
export async function removeOrphanedSnapshotFiles(runtime: { removeSnapshotFiles(snapshotId: string): Promise<void> }, pg: Pool, dataDir: string): Promise<string[]> {
  const orphaned = await new SandboxSnapshotStore(pg).missing(storedSnapshotIds(dataDir));
  for (const id of orphaned) await runtime.removeSnapshotFiles(id);
  return orphaned;
}
