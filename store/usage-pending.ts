import type { Pool } from 'pg';

/**
 * The account's hours whose rollups are not trusted (usage_pending_rollups: a batch of their
 * events is being moved to ClickHouse, or they are due for a correction; see
 * activities/usage-flush.ts). Reads take these hours from the raw table.
 */
export async function pendingHours(pool: Pool, accountId: string): Promise<Set<number>> {
  const { rows } = await pool.query<{ hour: string }>('SELECT hour FROM usage_pending_rollups WHERE account_id = $1', [accountId]);
  return new Set(rows.map((row) => Number(row.hour)));
}
