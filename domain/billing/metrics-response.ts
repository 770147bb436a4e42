import { BILLING_DIMENSIONS, isBillingDimension, unitOf, type UsageUnit } from './dimensions';
import { formatScaled, parseScaled, QUANTITY_SCALE, scaledToNumber } from './decimal';
import { ENTRY_FIELDS, enrichmentFields, fieldOf, reportsUsage, type EntryField } from './grouping';
import type { MetricsQuery } from './metrics-query';
import { bucketStarts, formatRfc3339 } from './time';

/** Usage by unit; one unit per group, since usage is shown only when billing_dimension is grouped. */
export type Usage = Partial<Record<UsageUnit, number>>;

export interface TimeseriesPoint {
  timestamp: string;
  cost: number;
  usage?: Usage;
}

export type MetricsEntry = Partial<Record<EntryField, string>> & {
  summary: { cost: number; usage?: Usage };
  timeseries: TimeseriesPoint[];
};

export interface MetricsResponse {
  startTime: string;
  endTime: string;
  resolution: string;
  summary: { totalCost: number; totalUsage?: Usage };
  data: MetricsEntry[];
  meta: { hasMore: boolean; nextCursor: string };
}

/** A result row from ClickHouse (JSONEachRow): strings, and numbers or quoted 64-bit integers. */
export type Row = Record<string, unknown>;

export interface PageRows {
  /** groupListSql rows: up to limit + 1 groups in key order (the extra one tells more follow). */
  groups?: Row[];
  /** bucketSql rows: per group (if grouped) and bucket, for the groups served. */
  buckets: Row[];
  /** totalsSql rows: per billing dimension over the whole filtered window (grouped queries). */
  totals?: Row[];
}

const nano = (value: unknown) => parseScaled(String(value), QUANTITY_SCALE);
const toNumber = (value: bigint) => scaledToNumber(value, QUANTITY_SCALE);

/**
 * Builds the 200 body: one entry per group with every bucket of the window, zero-filled.
 * `cursorAfter` makes the cursor of the next page from the last key served.
 */
export function assembleMetrics(query: MetricsQuery, rows: PageRows, cursorAfter: (lastKey: string[]) => string): MetricsResponse {
  const starts = bucketStarts(query.start, query.end, query.resolution);
  // The same labels for every group: formatted once.
  const labels = starts.map(formatRfc3339);
  const withUsage = reportsUsage(query.groupBy);
  const keyOf = (row: Row) => groupKey(query, row);

  const bucketsByGroup = new Map<string, Map<number, Row>>();
  for (const row of rows.buckets) {
    const id = JSON.stringify(keyOf(row));
    let byStart = bucketsByGroup.get(id);
    if (!byStart) bucketsByGroup.set(id, (byStart = new Map()));
    byStart.set(Number(row.bucket) * 1000, row);
  }

  // An ungrouped query has exactly one entry, the whole window, even when it is empty.
  const groups = rows.groups ?? [wholeWindow(rows.buckets)];
  const hasMore = groups.length > query.limit && query.groupBy.length > 0;
  const served = hasMore ? groups.slice(0, query.limit) : groups;

  const data = served.map((row): MetricsEntry => {
    const key = keyOf(row);
    const unit = withUsage ? unitOf(dimensionOf(row.billing_dimension)) : undefined;
    const entry: MetricsEntry = { summary: { cost: toNumber(nano(row.cost_sum)) }, timeseries: [] };
    if (unit) entry.summary.usage = { [unit]: toNumber(nano(row.quantity_sum)) };
    query.groupBy.forEach((dimension, i) => {
      entry[fieldOf(dimension)] = key[i];
    });
    for (const rule of enrichmentFields(query.groupBy)) {
      // A group spanning several values (e.g. one resource name in two workspaces) gets none.
      const min = row[`min_${rule.dimension}`];
      if (min === row[`max_${rule.dimension}`]) entry[rule.field] = String(min);
    }
    const byStart = bucketsByGroup.get(JSON.stringify(key));
    entry.timeseries = starts.map((start, i) => {
      const bucket = byStart?.get(start);
      const point: TimeseriesPoint = { timestamp: labels[i], cost: bucket ? toNumber(nano(bucket.cost_sum)) : 0 };
      if (unit) point.usage = { [unit]: bucket ? toNumber(nano(bucket.quantity_sum)) : 0 };
      return point;
    });
    return orderFields(entry);
  });

  let totalCost = 0n;
  const totalUsage = new Map<UsageUnit, bigint>();
  for (const row of rows.totals ?? groups) {
    totalCost += nano(row.cost_sum);
    if (!withUsage) continue;
    const unit = unitOf(dimensionOf(row.billing_dimension));
    totalUsage.set(unit, (totalUsage.get(unit) ?? 0n) + nano(row.quantity_sum));
  }
  const summary: MetricsResponse['summary'] = { totalCost: toNumber(totalCost) };
  if (withUsage) {
    summary.totalUsage = Object.fromEntries([...totalUsage].map(([unit, quantity]) => [unit, toNumber(quantity)]));
  }
  return {
    startTime: formatRfc3339(query.start),
    endTime: formatRfc3339(query.end),
    resolution: query.resolution,
    summary,
    data,
    meta: { hasMore, nextCursor: hasMore ? cursorAfter(keyOf(served[served.length - 1])) : '' },
  };
}

/** The group key of a row, in canonical groupBy order. */
export function groupKey(query: MetricsQuery, row: Row): string[] {
  return query.groupBy.map((dimension) => String(row[dimension]));
}

/** The single group of an ungrouped query: the sum of its buckets. */
function wholeWindow(buckets: Row[]): Row {
  const cost = buckets.reduce((sum, row) => sum + nano(row.cost_sum), 0n);
  return { cost_sum: formatScaled(cost, QUANTITY_SCALE) };
}

function dimensionOf(value: unknown): keyof typeof BILLING_DIMENSIONS {
  const name = String(value);
  if (!isBillingDimension(name)) throw new Error(`stored usage has an unknown billing dimension '${name}'`);
  return name;
}

/** Dimension fields first, in the order of the contract's table, then summary and timeseries. */
function orderFields(entry: MetricsEntry): MetricsEntry {
  const ordered: Partial<MetricsEntry> = {};
  for (const rule of ENTRY_FIELDS) if (entry[rule.field] !== undefined) ordered[rule.field] = entry[rule.field];
  return { ...ordered, summary: entry.summary, timeseries: entry.timeseries } as MetricsEntry;
}
