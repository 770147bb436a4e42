import { SandboxSnapshotStore } from '../store/sandbox-snapshots';
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
    async deleteSnapshotRecord(id: string): Promise<void> {
      await store.delete(id);
    },
  };
}

export type SnapshotControlActivities = ReturnType<typeof createSnapshotControlActivities>;
