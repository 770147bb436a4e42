import type { Pool } from 'pg';

/**
 * The account's hours whose rollups are not up to date yet (usage_pending_rollups: events of
 * them reached ClickHouse while they were open; the flush rebuilds them once closed). Reads take
 * these hours from the raw table.
 */
export async function pendingHours(pool: Pool, accountId: string): Promise<Set<number>> {
  const { rows } = await pool.query<{ hour: string }>('SELECT hour FROM usage_pending_rollups WHERE account_id = $1', [accountId]);
  return new Set(rows.map((row) => Number(row.hour)));
}
