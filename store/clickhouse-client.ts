import { createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
import type { HangarConfig } from '../domain/config';

/**
 * Settings of every query on a cluster (CLICKHOUSE_CLUSTER):
 *
 * - an insert into a Distributed table returns only once every shard holds its rows: by default
 *   it returns once they are queued on the server we talk to, and the flush's next statements
 *   (corrections from the raw events) would read without them;
 * - replicated tables would drop an insert whose block equals an earlier one, but two flushes
 *   may add identical rollup deltas that must both count (a re-sent raw event is deduplicated by
 *   its table's engine anyway);
 * - each shard's first live replica takes the reads and the writes, so a read sees what was just
 *   written, not a replica still fetching it (the flush's corrections depend on that too).
 */
export const CLUSTER_SETTINGS: ClickHouseSettings = { insert_distributed_sync: 1, insert_deduplicate: 0, load_balancing: 'in_order' };

export function createClickHouse(config: HangarConfig): ClickHouseClient {
  const url = config.clickhouseUrl ?? `http://127.0.0.1:${config.clickhouseHttpPort}`;
  return createClient({
    url,
    database: config.clickhouseDatabase,
    request_timeout: 30_000,
    clickhouse_settings: config.clickhouseCluster ? CLUSTER_SETTINGS : undefined,
  });
}
