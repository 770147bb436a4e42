import type { UsageTick } from '../billing/metering';
import type { SandboxKey, SandboxState } from './sandbox';

const GB = 1024 ** 3;

export interface SandboxMeterPeriod {
  key: SandboxKey;
  accountId: string;
  /** Period [from, to), epoch milliseconds. */
  from: number;
  to: number;
  state: SandboxState;
  /** The memory limit: what a running sandbox holds for its user. */
  memoryMb: number;
  /** Memory kept for the frozen state (standby). */
  frozenBytes: number;
  /** Its image storage: the image as the platform stores it plus the sandbox's own writable layer. */
  diskBytes: number;
}

/**
 * What a sandbox used over one period, in GB-seconds: compute (its memory limit) while RUNNING,
 * snapshot storage (the frozen memory) while in STANDBY, and image storage (stored image + layer)
 * throughout. Zero quantities are not recorded.
 */
export function sandboxUsageTicks(period: SandboxMeterPeriod): UsageTick[] {
  const seconds = Math.max(0, (period.to - period.from) / 1000);
  if (seconds === 0) return [];
  const base = {
    accountId: period.accountId,
    workspace: period.key.workspace,
    resourceType: 'sandbox' as const,
    resourceName: period.key.name,
    resourceUuid: period.key.id,
    periodStart: new Date(period.from),
  };
  const ticks: UsageTick[] = [
    period.state === 'RUNNING'
      ? { ...base, billingDimension: 'sandbox_compute_runtime_gbs', quantity: (period.memoryMb / 1024) * seconds }
      : { ...base, billingDimension: 'sandbox_snapshot_storage_gbs', quantity: (period.frozenBytes / GB) * seconds },
    { ...base, billingDimension: 'sandbox_image_storage_gbs', quantity: (period.diskBytes / GB) * seconds },
  ];
  return ticks.filter((tick) => tick.quantity > 0).map((tick) => ({ ...tick, quantity: roundQuantity(tick.quantity) }));
}

/** Quantities are stored at a fixed scale; rounding here keeps a retried tick identical. */
function roundQuantity(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}
