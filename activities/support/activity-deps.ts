import type { ClickHouseClient } from '@clickhouse/client';
import type { Client as TemporalClient } from '@temporalio/client';
import type { Pool } from 'pg';
import type { HangarConfig } from '../../domain/config';

/** What activity factories may use: the services of the process running the worker. */
export interface ActivityDeps {
  config: HangarConfig;
  pg: Pool;
  clickhouse: ClickHouseClient;
  temporal: TemporalClient;
}
