import { ResourceStore } from '../api/management/resources/store';
import { volumeUsageTicks, type VolumeKey, type VolumeMeterPeriod } from '../core/volume/types';
import type { ResourceEvent } from '../core/resource';
import type { ActivityDeps } from './deps';
import { recordWorkspaceUsage } from './usage-metering';

/** The control-plane side of a volume's life: its record in PostgreSQL and its usage. */
export function createVolumeControlActivities({ pg }: Pick<ActivityDeps, 'pg'>) {
  const store = new ResourceStore(pg);
  return {
    async markVolumeDeployed(key: VolumeKey, event: Omit<ResourceEvent, 'status' | 'time'>): Promise<void> {
      await store.transition(key.id, 'DEPLOYED', event);
    },
    async markVolumeFailed(key: VolumeKey, message: string): Promise<void> {
      await store.transition(key.id, 'FAILED', { type: 'Warning', message });
    },
    async markVolumeDeleting(key: VolumeKey, reason: string): Promise<void> {
      await store.transition(key.id, 'DELETING', { type: 'Normal', message: reason });
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
