import { call, type Session } from '../api';

// The metrics API's answer, as the server's own types say it (erased at build: no server code ships).
import type { MetricsEntry, MetricsResponse as MetricsPage, Usage } from '../../../domain/billing/metrics-response';
export type { MetricsEntry, MetricsPage, Usage };

export const GROUP_FIELDS = ['resource_type', 'billing_dimension', 'workspace', 'resource_name', 'resource_uuid'] as const;
export type GroupField = (typeof GROUP_FIELDS)[number];
export const RESOLUTIONS = ['auto', 'hourly', 'daily', 'weekly', 'monthly'] as const;

/** What the billing page asks for: the metrics API's window, resolution, grouping and page size. */
export interface MetricsQuery {
  startTime: string;
  endTime: string;
  resolution: (typeof RESOLUTIONS)[number];
  groupBy: GroupField[];
  limit: number;
}

const ENTRY_FIELD: Record<GroupField, keyof MetricsEntry> = {
  resource_type: 'resourceType',
  billing_dimension: 'billingDimension',
  workspace: 'workspace',
  resource_name: 'resourceName',
  resource_uuid: 'resourceUuid',
};

/** A group's values in the order it was grouped by. */
export function groupValues(entry: MetricsEntry, groupBy: GroupField[]): string[] {
  return groupBy.map((field) => String(entry[ENTRY_FIELD[field]] ?? ''));
}

export function groupLabel(entry: MetricsEntry, groupBy: GroupField[]): string {
  return groupValues(entry, groupBy).join(' / ');
}

function metricsPath(session: Session, query: MetricsQuery, cursor?: string): string {
  const params = new URLSearchParams({ startTime: query.startTime, endTime: query.endTime, groupBy: query.groupBy.join(','), limit: String(query.limit) });
  if (query.resolution !== 'auto') params.set('resolution', query.resolution);
  if (cursor) params.set('cursor', cursor);
  return `/v0/accounts/${encodeURIComponent(session.accountId)}/metrics?${params}`;
}

export function fetchMetricsPage(session: Session, query: MetricsQuery, cursor?: string): Promise<MetricsPage> {
  return call<MetricsPage>(session, metricsPath(session, query, cursor), { workspace: undefined });
}

/** Every page of a query (for the CSV export), following meta.nextCursor. */
export async function fetchAllGroups(session: Session, query: MetricsQuery): Promise<MetricsEntry[]> {
  const entries: MetricsEntry[] = [];
  let cursor: string | undefined;
  do {
    const page = await fetchMetricsPage(session, { ...query, limit: 100 }, cursor);
    entries.push(...page.data);
    cursor = page.meta.hasMore ? page.meta.nextCursor : undefined;
  } while (cursor);
  return entries;
}

/** The cost of each bucket summed over the groups given (what the stacked chart's top line shows). */
export function bucketTotals(entries: MetricsEntry[]): number[] {
  const totals: number[] = [];
  for (const entry of entries) entry.timeseries.forEach((point, i) => (totals[i] = (totals[i] ?? 0) + point.cost));
  return totals.map(roundNano);
}

/** Costs are exact to the nano-dollar; sums of floats are rounded back to it. */
export const roundNano = (usd: number) => Math.round(usd * 1e9) / 1e9;

const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 9 });
export const formatCost = (cost: number) => usd.format(cost);

const UNIT_NAMES: Record<string, string> = { gbs: 'GB·s', count: 'count', hours: 'hours' };
export function formatUsage(usage: Usage | undefined): string {
  if (!usage) return '';
  return Object.entries(usage)
    .map(([unit, quantity]) => `${quantity.toLocaleString('en-US', { maximumFractionDigits: 6 })} ${UNIT_NAMES[unit] ?? unit}`)
    .join(', ');
}
