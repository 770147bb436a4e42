import { hash } from 'node:crypto';
import type { BillingDimension, ResourceType } from './dimensions';
import { formatRfc3339 } from './time';

/** Usage of one running resource in one billing dimension over one metering period. */
export interface UsageTick {
  accountId: string;
  workspace: string;
  resourceType: ResourceType;
  resourceName: string;
  /** Instance id when the resource has one; the name identifies it otherwise. */
  resourceUuid?: string;
  billingDimension: BillingDimension;
  quantity: number;
  /** Start of the metering period the quantity covers (the event's timestamp). */
  periodStart: Date;
  /** Tells discrete events of one resource apart (a request id), for dimensions that count them. */
  occurrence?: string;
}

/**
 * Deterministic event id of a tick: the same resource, dimension and period always give the same
 * id, so a tick that is retried (after a crash, a timeout, a replayed activity) is counted once.
 */
export function meterEventId(tick: Omit<UsageTick, 'quantity' | 'accountId'>): string {
  const identity: (string | number)[] = [tick.workspace, tick.resourceType, tick.resourceUuid || tick.resourceName, tick.billingDimension, tick.periodStart.getTime()];
  // Only counted events have one, so the ids of period ticks stay what they always were.
  if (tick.occurrence) identity.push(tick.occurrence);
  return `meter-${hash('sha256', JSON.stringify(identity), 'hex').slice(0, 40)}`;
}

/** The ingestion form of a tick (the same validation applies as to external meters). */
export function tickEvent(tick: UsageTick): Record<string, unknown> {
  return {
    id: meterEventId(tick),
    timestamp: formatRfc3339(tick.periodStart.getTime()),
    workspace: tick.workspace,
    resourceType: tick.resourceType,
    resourceName: tick.resourceName,
    resourceUuid: tick.resourceUuid ?? '',
    billingDimension: tick.billingDimension,
    quantity: tick.quantity,
  };
}
