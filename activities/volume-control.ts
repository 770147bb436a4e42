import { ResourceStore } from '../store/resources';
import { volumeUsageTicks, type VolumeKey, type VolumeMeterPeriod } from '../domain/volume/volume';
import type { ResourceEvent } from '../domain/resource';
import { StateHistory } from '../store/state-history';
import type { ActivityDeps } from './support/activity-deps';
import { recordWorkspaceUsage } from './usage-metering';

/** The control-plane side of a volume's life: its record in PostgreSQL and its usage. */
export function createVolumeControlActivities({ pg }: Pick<ActivityDeps, 'pg'>) {
  const store = new ResourceStore(pg);
  const history = new StateHistory(pg);
  return {
    /**
     * Its storage holds `sizeMb` from `since` on (when the workflow's metering switched size),
     * by default from now; answers since when, where a new volume's metering starts.
     */
    async markVolumeDeployed(key: VolumeKey, event: Omit<ResourceEvent, 'status' | 'time'>, storage?: { sizeMb: number; since?: number }): Promise<number> {
      await store.transition(key.id, 'DEPLOYED', event);
      const since = storage?.since ?? Date.now();
      if (!storage) return since;
      const facts = { state: 'DEPLOYED', memoryMb: 0, storedBytes: storage.sizeMb * 1024 * 1024 };
      return history.enter({ workspaceId: key.workspaceId, resourceType: 'volume', resourceUuid: key.id, resourceName: key.name }, facts, since);
    },
    async markVolumeFailed(key: VolumeKey, message: string): Promise<void> {
      await store.transition(key.id, 'FAILED', { type: 'Warning', message });
    },
    /** Answers when: its state history ends there, and its metering with it. */
    async markVolumeDeleting(key: VolumeKey, reason: string): Promise<number> {
      await store.transition(key.id, 'DELETING', { type: 'Normal', message: reason });
      return history.end(key.id, Date.now());
    },
    async deleteVolumeRecord(key: VolumeKey): Promise<void> {
      await store.deleteById(key.id);
    },
    /** Idempotent: a retried period produces the same event ids and is counted once. */
    async recordVolumeUsage(period: Omit<VolumeMeterPeriod, 'accountId'>): Promise<void> {
      await recordWorkspaceUsage(pg, period.key.workspaceId, (accountId) => volumeUsageTicks({ ...period, accountId }));
    },
  };
}

export type VolumeControlActivities = ReturnType<typeof createVolumeControlActivities>;
