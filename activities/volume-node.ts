import type { VolumeKey, VolumeStorageKind } from '../domain/volume/volume';
import type { VolumeStore } from '../runtime/volume-store';

/** The node side of a volume: its image file and mount point on this machine. */
export function createVolumeNodeActivities({ volumes }: { volumes: VolumeStore }) {
  return {
    async createVolumeStorage(key: VolumeKey, sizeMb: number): Promise<{ kind: VolumeStorageKind; reason?: string }> {
      return volumes.create(key.id, sizeMb);
    },
    async growVolumeStorage(key: VolumeKey, sizeMb: number): Promise<{ pending?: string }> {
      return volumes.grow(key.id, sizeMb);
    },
    async deleteVolumeStorage(key: VolumeKey): Promise<void> {
      await volumes.remove(key.id);
    },
  };
}

export type VolumeNodeActivities = ReturnType<typeof createVolumeNodeActivities>;
