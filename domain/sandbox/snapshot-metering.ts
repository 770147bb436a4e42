import type { UsageTick } from '../billing/metering';
import type { SnapshotKey } from './snapshot';

const GB = 1024 ** 3;

export interface SnapshotMeterPeriod {
  key: SnapshotKey;
  accountId: string;
  /** The sandbox it was captured from: snapshots are billed under their sandbox's name. */
  sourceName: string;
  /** Period [from, to), epoch milliseconds. */
  from: number;
  to: number;
  /** The snapshot's files on disk. */
  sizeBytes: number;
}

/**
 * What a ready snapshot's files cost over one period, in GB-seconds of the contract's
 * `sandbox_snapshot_storage_gbs` (resource type sandbox): the one dimension the contract has for
 * a sandbox's stored state. Billed under the source sandbox's name, with the snapshot's id as the
 * instance id, so its ticks never share an id with the sandbox's own standby ticks and a
 * snapshot outliving its sandbox still says whose it was.
 */
export function snapshotStorageTicks(period: SnapshotMeterPeriod): UsageTick[] {
  const seconds = Math.max(0, (period.to - period.from) / 1000);
  const quantity = Math.round((period.sizeBytes / GB) * seconds * 1e6) / 1e6;
  if (quantity <= 0) return [];
  return [
    {
      accountId: period.accountId,
      workspace: period.key.workspace,
      resourceType: 'sandbox',
      resourceName: period.sourceName,
      resourceUuid: period.key.id,
      billingDimension: 'sandbox_snapshot_storage_gbs',
      quantity,
      periodStart: new Date(period.from),
    },
  ];
}
