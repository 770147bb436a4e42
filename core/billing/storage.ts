/**
 * Where usage lives in ClickHouse, and which stored table answers which part of a time window.
 *
 * - raw: every accepted event (ReplacingMergeTree on account, hour and id, read with FINAL);
 * - hourly: per-hour aggregates per account and dimension values, rebuilt from deduplicated raw data;
 * - daily: per-day aggregates, rebuilt from the latest hourly snapshots;
 * - hourlyDims, dailyDims: the same without resource name and uuid (per workspace, resource type
 *   and billing dimension), a few dozen rows per account and period instead of one per resource.
 *   Queries that neither group nor filter by resource name or uuid read these.
 *
 * A rollup rebuild writes a complete snapshot of each (account, period) it touches, in one part
 * per partition (so atomically), under a version higher than any before. Reads keep, per period,
 * the rows of the highest version present (latestSnapshot, latestRowsSql): always one complete
 * snapshot, never two.
 *
 * A window is cut into whole days (daily), whole hours (hourly) and sub-hour edges (raw), so
 * reads touch the smallest table that holds each part exactly.
 */
export interface UsageTables {
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
    raw: `${database}.usage_events`,
    hourly: `${database}.usage_hourly`,
    daily: `${database}.usage_daily`,
    hourlyDims: `${database}.usage_hourly_dims`,
    dailyDims: `${database}.usage_daily_dims`,
  };
}

/**
 * Condition keeping only the latest snapshot of each period of a rollup table; `scope` selects
 * the rows to look at, at least those of the outer query for one account (a latest snapshot holds
 * every key of its period, so any such selection finds its version). The rebuilds use it: they
 * read whole periods, where finding each period's version is cheap and the rows need no grouping
 * by identity (compare latestRowsSql, for the narrower selections of metrics reads).
 */
export function latestSnapshot(table: string, time: string, scope: string): string {
  return `(${time}, version) IN (SELECT ${time}, max(version) FROM ${table} WHERE ${scope} GROUP BY ${time})`;
}

/** What identifies a row of a rollup table within its account and period. */
const ROLLUP_IDENTITY = {
  full: ['workspace', 'resource_type', 'resource_name', 'resource_uuid', 'billing_dimension'],
  dims: ['workspace', 'resource_type', 'billing_dimension'],
} as const;

/**
 * The rows of the latest snapshot of each period among those `where` selects from a rollup
 * table (`dims`: one without resource names and uuids), as account_id, the time column, the
 * identity columns and `measures`. A later snapshot of a period holds every row identity of an
 * earlier one (events are never taken back), so the latest snapshot's rows are, per identity,
 * the values of its highest version: found in one grouped pass, where latestSnapshot reads the
 * table twice (cheaper for the narrow selections of metrics reads, dearer for whole periods).
 */
export function latestRowsSql(table: string, time: string, dims: boolean, measures: readonly string[], where: string): string {
  const identity = ['account_id', time, ...ROLLUP_IDENTITY[dims ? 'dims' : 'full']].join(', ');
  // Aliases differ from the column names: ClickHouse would otherwise see the alias inside its own aggregate.
  const latest = measures.map((measure) => `argMax(${measure}, version) AS latest_${measure}`);
  const renamed = measures.map((measure) => `latest_${measure} AS ${measure}`);
  return `SELECT ${[identity, ...renamed].join(', ')} FROM (SELECT ${[identity, ...latest].join(', ')} FROM ${table} WHERE ${where} GROUP BY ${identity})`;
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
 * use it, since a daily row cannot be split into hours. `openHours` (hour starts) have no
 * up-to-date rollup yet (see usage_pending_rollups): they, and so their days, are read raw.
 */
export function planSegments(from: number, to: number, useDaily: boolean, openHours: ReadonlySet<number> = NO_HOURS): Segment[] {
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
  // Whole hours [a, b) with none open: whole days daily (when allowed), the rest hourly.
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
  for (const hour of [...openHours].filter((h) => h >= firstHour && h < lastHour).sort((a, b) => a - b)) {
    wholeHours(cursor, hour);
    push('raw', hour, hour + HOUR_S);
    cursor = hour + HOUR_S;
  }
  wholeHours(cursor, lastHour);
  push('raw', lastHour, to);
  return segments;
}

const NO_HOURS: ReadonlySet<number> = new Set();
