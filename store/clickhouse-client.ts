import { createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
import type { HangarConfig } from '../domain/config';

/**
 * On a cluster (CLICKHOUSE_CLUSTER) an insert into a Distributed table returns only once every
 * shard holds its rows: by default it would return once they are queued on the server we talk
 * to, and the flush's next statements (rollups from the raw events, corrections) would read
 * without them. Replicated tables also drop an insert whose block equals an earlier one; two
 * flushes may add identical rollup deltas that must both count, and a re-sent raw event is
 * deduplicated by the table's engine anyway.
 */
export const CLUSTER_SETTINGS: ClickHouseSettings = { insert_distributed_sync: 1, insert_deduplicate: 0 };

export function createClickHouse(config: HangarConfig): ClickHouseClient {
  const url = config.clickhouseUrl ?? `http://127.0.0.1:${config.clickhouseHttpPort}`;
  return createClient({
    url,
    database: config.clickhouseDatabase,
    request_timeout: 30_000,
    clickhouse_settings: config.clickhouseCluster ? CLUSTER_SETTINGS : undefined,
  });
}
