import type { Pool, PoolClient } from 'pg';

/** A pool, or a connection in a transaction: what a statement may run on. */
export type Queryable = Pool | PoolClient;

/**
 * Runs `work` in one transaction on a connection of its own: committed when it returns,
 * rolled back when it throws (the error goes on), the connection released either way.
 */
export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
