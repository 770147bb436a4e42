import { createClient, type ClickHouseClient } from '@clickhouse/client';
import type { HangarConfig } from '../domain/config';

export function createClickHouse(config: HangarConfig): ClickHouseClient {
  const url = config.clickhouseUrl ?? `http://127.0.0.1:${config.clickhouseHttpPort}`;
  return createClient({ url, database: config.clickhouseDatabase, request_timeout: 30_000 });
}
