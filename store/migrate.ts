import type { Pool } from 'pg';
import { migrations, type Migration } from './migrations';

// Any fixed number works; it only has to be the same for every Hangar process sharing a database.
const MIGRATION_LOCK = 7_460_011;

/**
 * Applies pending migrations, each in its own transaction. An advisory lock makes concurrent
 * starts (several API nodes, tests) safe: one applies, the others wait and then find nothing to do.
 */
export async function migrate(pool: Pool, list: Migration[] = migrations): Promise<string[]> {
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const done = new Set((await client.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name));
    for (const migration of list) {
      if (done.has(migration.name)) continue;
      await client.query('BEGIN');
      try {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [migration.name]);
        await client.query('COMMIT');
        applied.push(migration.name);
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${migration.name} failed: ${(err as Error).message}`, { cause: err });
      }
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    client.release();
  }
  return applied;
}
