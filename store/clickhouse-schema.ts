import type { ClickHouseClient } from '@clickhouse/client';
import { retiredRollups, usageTables } from '../domain/billing/storage';

/**
 * ClickHouse schema of usage metering. Idempotent (IF NOT EXISTS) and valid on 18.16 as on
 * current releases.
 *
 * usage_events deduplicates re-sent rows (same account, hour and id) on merge, and every read
 * uses FINAL, so a row inserted twice by a retried flush counts once. The rollups are sums
 * (SummingMergeTree), written by the flush from deduplicated data only, never by a materialized
 * view: on 18.16 a view would double-count re-sent rows (see domain/billing/rollup-sql.ts). Merges
 * add up rows of the same identity and period; reads sum, so they never depend on merges.
 *
 * The versioned rollups of earlier releases are dropped: the flush fills the sums of every
 * hour already stored from the raw events (usage_rollup_backfill), reading those hours raw
 * meanwhile.
 */
export async function migrateClickHouse(client: ClickHouseClient, database: string): Promise<void> {
  const tables = usageTables(database);
  const measures = `
      quantity           Decimal(38, 9),
      cost               Decimal(38, 9),
      events             Int64`;
  const dims = `
      workspace          String,
      resource_type      String,
      resource_name      String,
      resource_uuid      String,
      billing_dimension  String,`;
  const fewDims = `
      workspace          String,
      resource_type      String,
      billing_dimension  String,`;
  const rollup = (table: string, time: string, columns: string, sortKey: string, partition: string, granularity: number) =>
    `CREATE TABLE IF NOT EXISTS ${table} (
      account_id  String,
      ${time}     DateTime('UTC'),${columns}${measures}
    ) ENGINE = SummingMergeTree((quantity, cost, events))
    PARTITION BY ${partition}
    ORDER BY (account_id, ${sortKey})
    SETTINGS index_granularity = ${granularity}`;
  // Per resource: workspace first, so that a workspace's rows of a window lie together (every
  // query of a non-admin is limited to theirs), then name, so that small granules let the primary
  // key skip the other pages' names.
  const fullKey = (time: string) => `workspace, ${time}, resource_name, resource_uuid, resource_type, billing_dimension`;
  const fewKey = (time: string) => `${time}, workspace, resource_type, billing_dimension`;
  const statements = [
    `CREATE DATABASE IF NOT EXISTS ${database}`,
    `CREATE TABLE IF NOT EXISTS ${tables.raw} (
      account_id         String,
      id                 String,
      event_time         DateTime('UTC'),${dims}
      quantity           Decimal(38, 9),
      cost               Decimal(38, 9)
    ) ENGINE = ReplacingMergeTree()
    PARTITION BY toYYYYMM(event_time)
    ORDER BY (account_id, toStartOfHour(event_time), id)`,
    rollup(tables.hourly, 'hour', dims, fullKey('hour'), 'toYYYYMM(hour)', 256),
    rollup(tables.daily, 'day', dims, fullKey('day'), 'toYear(day)', 256),
    rollup(tables.hourlyDims, 'hour', fewDims, fewKey('hour'), 'toYYYYMM(hour)', 8192),
    rollup(tables.dailyDims, 'day', fewDims, fewKey('day'), 'toYear(day)', 8192),
    ...retiredRollups(database).map((table) => `DROP TABLE IF EXISTS ${table}`),
  ];
  for (const query of statements) await client.command({ query });
}
