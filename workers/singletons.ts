import type { Client } from '@temporalio/client';
import { startUsageFlush } from '../activities/usage-flush';
import type { HangarConfig } from '../domain/config';

/**
 * Long-lived workflows the platform keeps exactly one of (per deployment). Starting them is
 * idempotent: their ids are fixed, so every worker start may ask and only the first one starts.
 */
export async function startSingletonWorkflows(client: Client, config: HangarConfig): Promise<void> {
  // Moves accepted usage events from the PostgreSQL outbox to ClickHouse.
  await startUsageFlush(client, config.taskQueue);
}
