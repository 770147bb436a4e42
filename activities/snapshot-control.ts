import type { SnapshotKey } from '../domain/sandbox/snapshot';
import { snapshotStorageTicks } from '../domain/sandbox/snapshot-metering';
import { SandboxSnapshotStore } from '../store/sandbox-snapshots';
import { recordWorkspaceUsage } from './usage-metering';
import type { ActivityDeps } from './support/activity-deps';

/** The control-plane side of a snapshot: its record in PostgreSQL (the node records a capture done). */
export function createSnapshotControlActivities({ pg }: Pick<ActivityDeps, 'pg'>) {
  const store = new SandboxSnapshotStore(pg);
  return {
    async markSnapshotFailed(id: string, message: string): Promise<void> {
      await store.settle(id, { status: 'failed', message });
    },
    async markSnapshotDeleting(id: string): Promise<void> {
      await store.markDeleting(id);
    },
    /**
     * Records the storage of the snapshot's files over [from, to), at the size its capture
     * measured; ids follow the period, so a retry counts once. A snapshot whose record is gone
     * (or that has no size: never captured) has nothing to bill.
     */
    async recordSnapshotUsage(key: SnapshotKey, from: number, to: number): Promise<void> {
      const row = await store.byId(key.id);
      if (!row || row.size_bytes === null) return;
      const period = { key, sourceName: row.source_name, from, to, sizeBytes: Number(row.size_bytes) };
      await recordWorkspaceUsage(pg, key.workspaceId, (accountId) => snapshotStorageTicks({ ...period, accountId }));
    },
    async deleteSnapshotRecord(id: string): Promise<void> {
      await store.delete(id);
    },
  };
}

export type SnapshotControlActivities = ReturnType<typeof createSnapshotControlActivities>;
