import type { ClickHouseClient } from '@clickhouse/client';
import { retiredRollups } from '../domain/billing/storage';
import { clusterDdl, clusterShape } from './clickhouse-cluster-schema';
import { createTableSql, usageTableDefinitions } from './clickhouse-tables';

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
 *
 * With `cluster` (CLICKHOUSE_CLUSTER) the same tables are created ON CLUSTER, sharded: see
 * clickhouse-cluster-schema.ts.
 */
export async function migrateClickHouse(client: ClickHouseClient, database: string, cluster?: string): Promise<void> {
  const statements = cluster
    ? clusterDdl(database, cluster, await clusterShape(client, database, cluster))
    : [
        `CREATE DATABASE IF NOT EXISTS ${database}`,
        ...usageTableDefinitions(database).map((table) => createTableSql(table.name, table, `${table.engine}(${table.engineArgs})`)),
        ...retiredRollups(database).map((table) => `DROP TABLE IF EXISTS ${table}`),
      ];
  for (const query of statements) await client.command({ query });
}
