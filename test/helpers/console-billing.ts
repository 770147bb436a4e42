import { randomBytes } from 'node:crypto';

/** A usage event as POST /v0/accounts/{id}/usage-events takes it. */
export interface SeedEvent {
  id: string;
  timestamp: string;
  workspace: string;
  resourceType: 'sandbox' | 'agent' | 'custom_domain';
  resourceName: string;
  billingDimension: string;
  quantity: number;
}

const DAY_MS = 86_400_000;
const KINDS = [
  { resourceType: 'sandbox', billingDimension: 'sandbox_compute_runtime_gbs', quantity: 3600 },
  { resourceType: 'agent', billingDimension: 'agent_async_requests_count', quantity: 40 },
  { resourceType: 'custom_domain', billingDimension: 'custom_domain_active_time_hours', quantity: 2 },
] as const;

/**
 * Usage of `groups` resources (`res-000`, `res-001`...) of three types and units, spread over
 * `days` days ending before `end` (00:00 UTC): resource i has an event on every `1 + i % 7`th
 * day, with quantities that vary by day, so that buckets and groups all differ.
 */
export function seedUsage(workspace: string, options: { groups: number; days: number; end: number }): SeedEvent[] {
  const run = randomBytes(4).toString('hex');
  const events: SeedEvent[] = [];
  const start = options.end - options.days * DAY_MS;
  for (let i = 0; i < options.groups; i++) {
    const kind = KINDS[i % KINDS.length];
    for (let day = i % 7; day < options.days; day += 1 + (i % 7)) {
      events.push({
        id: `console-${run}-${i}-${day}`,
        timestamp: new Date(start + day * DAY_MS + 3_600_000 * (1 + (i % 20))).toISOString(),
        workspace,
        resourceType: kind.resourceType,
        resourceName: `res-${String(i).padStart(3, '0')}`,
        billingDimension: kind.billingDimension,
        quantity: kind.quantity * (1 + ((i + day) % 5)),
      });
    }
  }
  return events;
}

/** 00:00 UTC of today. */
export const todayUtc = () => Math.floor(Date.now() / DAY_MS) * DAY_MS;
export const isoSeconds = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
