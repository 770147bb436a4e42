import { createClient } from '@clickhouse/client';
import { Pool } from 'pg';
import { migrateClickHouse } from '../../store/clickhouse-schema';
import { migrate } from '../../store/migrate';
import { clickhouseTarget } from './urls';

export interface StackEndpoints {
  databaseUrl: string;
  clickhouseUrl: string;
  clickhouseDatabase: string;
  /** CLICKHOUSE_CLUSTER: the usage schema is created on this cluster of the server's configuration. */
  clickhouseCluster?: string;
}

/** Brings both schemas up to date: PostgreSQL migrations, then the ClickHouse DDL. Idempotent. */
export async function applySchemas(stack: StackEndpoints): Promise<{ postgresApplied: string[] }> {
  const pool = new Pool({ connectionString: stack.databaseUrl, max: 2 });
  try {
    const postgresApplied = await migrate(pool);
    const target = clickhouseTarget(stack.clickhouseUrl, stack.clickhouseDatabase);
    const clickhouse = createClient({ url: target.serverUrl, username: target.username, password: target.password });
    try {
      await migrateClickHouse(clickhouse, target.database, stack.clickhouseCluster);
    } finally {
      await clickhouse.close();
    }
    return { postgresApplied };
  } finally {
    await pool.end();
  }
}
