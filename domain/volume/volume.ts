import type { UsageTick } from '../billing/metering';

/** Volume sizes in MB: from 1 MB up to 1 TiB. */
export const MIN_VOLUME_SIZE_MB = 1;
export const MAX_VOLUME_SIZE_MB = 1_048_576;

/** spec of a volume resource. */
export interface VolumeSpec {
  /** Size in MB; it may grow, never shrink. */
  size: number;
}

/** Identifies one volume everywhere: the resource row, the workflow and the node's files. */
export interface VolumeKey {
  /** The resource's uuid; also names the image file and mount point on the node. */
  id: string;
  workspace: string;
  workspaceId: string;
  name: string;
}

/** How the node keeps a volume's files: an ext4 image with a real size, or a plain folder. */
export type VolumeStorageKind = 'loop' | 'folder';

export function volumeWorkflowId(workspace: string, name: string): string {
  return `volume/${workspace}/${name}`;
}

export interface VolumeMeterPeriod {
  key: VolumeKey;
  accountId: string;
  /** Period [from, to), epoch milliseconds. */
  from: number;
  to: number;
  sizeMb: number;
}

/** The storage a volume reserves over one period: its size in GB times the seconds it existed. */
export function volumeUsageTicks(period: VolumeMeterPeriod): UsageTick[] {
  const seconds = Math.max(0, (period.to - period.from) / 1000);
  const quantity = Math.round((period.sizeMb / 1024) * seconds * 1e6) / 1e6;
  if (quantity <= 0) return [];
  return [
    {
      accountId: period.accountId,
      workspace: period.key.workspace,
      resourceType: 'volume',
      resourceName: period.key.name,
      resourceUuid: period.key.id,
      billingDimension: 'volume_storage_gbs',
      quantity,
      periodStart: new Date(period.from),
    },
  ];
}
