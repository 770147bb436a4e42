import { sqlLiteral } from '../sql-literal';
import { latestSnapshot, type UsageTables } from './storage';

/**
 * Rebuild statements of the rollups. Each recomputes whole hours (or days) of one account from
 * deduplicated data and writes them as a new snapshot with a fresh version, so the result is the
 * same however often a flush is retried and however the raw rows were re-sent. They must run
 * with REBUILD_SETTINGS, which make every snapshot land in one part per partition (atomically).
 * Order matters: each statement reads what the one before it wrote.
 */
export const REBUILD_SETTINGS = {
  // Squash the whole result into one block: one part per partition, never a partial snapshot.
  min_insert_block_size_rows: '1000000000000',
  min_insert_block_size_bytes: '1000000000000',
};

const FULL_KEY = 'workspace, resource_type, resource_name, resource_uuid, billing_dimension';
const FEW_KEY = 'workspace, resource_type, billing_dimension';
const HOUR_S = 3600;
const DAY_S = 86_400;

/** The four statements that bring the rollups up to date for `hours` (hour starts, epoch seconds). */
export function rebuildSql(tables: UsageTables, accountId: string, hours: Iterable<number>, version: bigint): string[] {
  const hourList = [...new Set(hours)].sort((a, b) => a - b);
  const dayList = [...new Set(hourList.map((hour) => hour - (hour % DAY_S)))];
  const v = sqlLiteral(version);
  const rawScope = periodScope('event_time', 'toStartOfHour', accountId, hourList, HOUR_S);
  const hourScope = periodScope('hour', 'toStartOfHour', accountId, hourList, HOUR_S);
  const dayOfHourScope = periodScope('hour', 'toStartOfDay', accountId, dayList, DAY_S);
  const dayScope = periodScope('day', 'toStartOfDay', accountId, dayList, DAY_S);
  const insert = (table: string, time: string, key: string) => `INSERT INTO ${table} (account_id, ${time}, ${key}, quantity, cost, events, version) `;
  return [
    // Hours from the raw events (FINAL: a re-sent row counts once).
    insert(tables.hourly, 'hour', FULL_KEY) +
      `SELECT account_id, toStartOfHour(event_time) AS period, ${FULL_KEY}, sum(quantity), sum(cost), count(), ${v} ` +
      `FROM ${tables.raw} FINAL WHERE ${rawScope} GROUP BY account_id, period, ${FULL_KEY}`,
    // The same hours without names and uuids.
    insert(tables.hourlyDims, 'hour', FEW_KEY) +
      `SELECT account_id, hour, ${FEW_KEY}, sum(quantity), sum(cost), sum(events), ${v} ` +
      `FROM ${tables.hourly} WHERE ${hourScope} AND ${latestSnapshot(tables.hourly, 'hour', hourScope)} GROUP BY account_id, hour, ${FEW_KEY}`,
    // Whole days of those hours from the hourly snapshots.
    insert(tables.daily, 'day', FULL_KEY) +
      `SELECT account_id, toStartOfDay(hour) AS period, ${FULL_KEY}, sum(quantity), sum(cost), sum(events), ${v} ` +
      `FROM ${tables.hourly} WHERE ${dayOfHourScope} AND ${latestSnapshot(tables.hourly, 'hour', dayOfHourScope)} GROUP BY account_id, period, ${FULL_KEY}`,
    insert(tables.dailyDims, 'day', FEW_KEY) +
      `SELECT account_id, day, ${FEW_KEY}, sum(quantity), sum(cost), sum(events), ${v} ` +
      `FROM ${tables.daily} WHERE ${dayScope} AND ${latestSnapshot(tables.daily, 'day', dayScope)} GROUP BY account_id, day, ${FEW_KEY}`,
  ];
}

// The outer time range lets ClickHouse skip by primary key; the IN list keeps exactly the periods.
function periodScope(column: string, align: string, accountId: string, periods: number[], length: number): string {
  return [
    `account_id = ${sqlLiteral(accountId)}`,
    `${column} >= ${sqlLiteral(new Date(periods[0] * 1000))}`,
    `${column} < ${sqlLiteral(new Date((periods[periods.length - 1] + length) * 1000))}`,
    `toUInt32(${align}(${column})) IN (${periods.map(sqlLiteral).join(', ')})`,
  ].join(' AND ');
}
