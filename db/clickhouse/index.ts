import type { ClickHouseClient } from '@clickhouse/client';
import { usageTables } from '../../core/billing/storage';

/**
 * ClickHouse schema of usage metering. Idempotent (IF NOT EXISTS) and valid on 18.16 as on
 * current releases.
 *
 * usage_events deduplicates re-sent rows (same account, hour and id) on merge, and every read
 * uses FINAL, so a row inserted twice by a retried flush counts once. The rollups are rebuilt
 * from deduplicated data by the flush, never fed by a materialized view: on 18.16 a view would
 * double-count re-sent rows. Each rebuild is a complete, versioned snapshot of its periods (see
 * core/billing/storage.ts); merges drop superseded versions, reads never depend on them having.
 */
export async function migrateClickHouse(client: ClickHouseClient, database: string): Promise<void> {
  const tables = usageTables(database);
  const measures = `
      quantity           Decimal(38, 9),
      cost               Decimal(38, 9),
      events             UInt64,
      version            UInt64`;
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
  const rollup = (table: string, time: string, columns: string, key: string, partition: string, granularity: number) =>
    `CREATE TABLE IF NOT EXISTS ${table} (
      account_id  String,
      ${time}     DateTime('UTC'),${columns}${measures}
    ) ENGINE = ReplacingMergeTree(version)
    PARTITION BY ${partition}
    ORDER BY (account_id, ${time}, ${key})
    SETTINGS index_granularity = ${granularity}`;
  // Workspace, then name: the primary key then skips the rows of other workspaces (every query of
  // a non-admin is limited to theirs) and, with small granules, of the other pages' names.
  const fullKey = 'workspace, resource_name, resource_uuid, resource_type, billing_dimension';
  const fewKey = 'workspace, resource_type, billing_dimension';
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
    rollup(tables.hourly, 'hour', dims, fullKey, 'toYYYYMM(hour)', 256),
    rollup(tables.daily, 'day', dims, fullKey, 'toYear(day)', 256),
    rollup(tables.hourlyDims, 'hour', fewDims, fewKey, 'toYYYYMM(hour)', 8192),
    rollup(tables.dailyDims, 'day', fewDims, fewKey, 'toYear(day)', 8192),
  ];
  for (const query of statements) await client.command({ query });
}
