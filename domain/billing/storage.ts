/**
 * Where usage lives in ClickHouse, and which stored table answers which part of a time window.
 *
 * - raw: every accepted event (ReplacingMergeTree on account, hour and id, read with FINAL);
 * - hourly: per-hour sums per account and dimension values;
 * - daily: per-day sums;
 * - hourlyDims, dailyDims: the same without resource name and uuid (per workspace, resource type
 *   and billing dimension), a few dozen rows per account and period instead of one per resource.
 *   Queries that neither group nor filter by resource name or uuid read these.
 *
 * The rollups are additive (SummingMergeTree): the value of a row identity in a period is the sum
 * of all its stored rows, whatever merges have done so far, so reads just sum. Each row is either
 * the delta of one batch of new events or a correction (see rollup-sql.ts); reads never need to
 * tell versions apart.
 *
 * A window is cut into whole days (daily), whole hours (hourly) and sub-hour edges (raw), so
 * reads touch the smallest table that holds each part exactly. Hours whose rollups are not
 * trusted yet (usage_pending_rollups) are read raw.
 */
export interface UsageTables {
  database: string;
  raw: string;
  hourly: string;
  daily: string;
  hourlyDims: string;
  dailyDims: string;
}

/** Granularity of stored data: single events, hours or days. */
export type UsageSource = 'raw' | 'hourly' | 'daily';

/** Time column of each granularity, a DateTime('UTC'). */
export const TIME_COLUMN: Record<UsageSource, string> = { raw: 'event_time', hourly: 'hour', daily: 'day' };

/** The table holding a granularity, with (`dims`) or without resource names and uuids. */
export function tableOf(tables: UsageTables, source: UsageSource, dims: boolean): string {
  if (source === 'raw') return tables.raw;
  if (source === 'hourly') return dims ? tables.hourlyDims : tables.hourly;
  return dims ? tables.dailyDims : tables.daily;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

export function usageTables(database: string): UsageTables {
  if (!IDENTIFIER.test(database)) throw new Error(`invalid ClickHouse database name '${database}'`);
  return {
    database,
    raw: `${database}.usage_events`,
    hourly: `${database}.usage_hourly_sums`,
    daily: `${database}.usage_daily_sums`,
    hourlyDims: `${database}.usage_hourly_dims_sums`,
    dailyDims: `${database}.usage_daily_dims_sums`,
  };
}

/** The versioned rollups of earlier releases, dropped by the migration (the sums are filled from raw instead). */
export function retiredRollups(database: string): string[] {
  return ['usage_hourly', 'usage_daily', 'usage_hourly_dims', 'usage_daily_dims'].map((name) => `${database}.${name}`);
}

export interface Segment {
  source: UsageSource;
  /** Epoch seconds, from inclusive, to exclusive. */
  from: number;
  to: number;
}

const HOUR_S = 3600;
const DAY_S = 86_400;

const floorTo = (value: number, step: number) => Math.floor(value / step) * step;
const ceilTo = (value: number, step: number) => Math.ceil(value / step) * step;

/**
 * Cuts [from, to) (epoch seconds) into consecutive segments, each read from one table. With
 * `useDaily`, whole UTC days come from the daily table; only bucket sizes of a day or more may
 * use it, since a daily row cannot be split into hours. `pendingHours` (hour starts) have no
 * trusted rollup (see usage_pending_rollups): they, and so their days, are read raw.
 */
export function planSegments(from: number, to: number, useDaily: boolean, pendingHours: ReadonlySet<number> = NO_HOURS): Segment[] {
  if (from >= to) return [];
  const firstHour = ceilTo(from, HOUR_S);
  const lastHour = floorTo(to, HOUR_S);
  if (firstHour >= lastHour) return [{ source: 'raw', from, to }];
  const segments: Segment[] = [];
  const push = (source: UsageSource, a: number, b: number) => {
    if (a >= b) return;
    const last = segments[segments.length - 1];
    if (last?.source === source && last.to === a) last.to = b;
    else segments.push({ source, from: a, to: b });
  };
  // Whole hours [a, b) with none pending: whole days daily (when allowed), the rest hourly.
  const wholeHours = (a: number, b: number) => {
    const firstDay = ceilTo(a, DAY_S);
    const lastDay = floorTo(b, DAY_S);
    if (useDaily && firstDay < lastDay) {
      push('hourly', a, firstDay);
      push('daily', firstDay, lastDay);
      push('hourly', lastDay, b);
    } else {
      push('hourly', a, b);
    }
  };
  push('raw', from, firstHour);
  let cursor = firstHour;
  for (const hour of [...pendingHours].filter((h) => h >= firstHour && h < lastHour).sort((a, b) => a - b)) {
    wholeHours(cursor, hour);
    push('raw', hour, hour + HOUR_S);
    cursor = hour + HOUR_S;
  }
  wholeHours(cursor, lastHour);
  push('raw', lastHour, to);
  return segments;
}

const NO_HOURS: ReadonlySet<number> = new Set();
