import { Pool } from 'pg';
import { migrate } from '../../store/migrate';
import { migrations } from '../../store/migrations';

/** A database of its own on the test stack's PostgreSQL, for a test that migrates or breaks one. */
export interface ScratchDatabase {
  pool: Pool;
  /** Applies the migrations up to (not including) `name`, or all of them. */
  migrateUpTo(name?: string): Promise<void>;
  drop(): Promise<void>;
}

/** Creates an empty database named `<prefix>_<pid>_<time>` next to the stack's. */
export async function scratchDatabase(databaseUrl: string, prefix: string, maxConnections = 2): Promise<ScratchDatabase> {
  const name = `${prefix}_${process.pid}_${Date.now()}`;
  const admin = new Pool({ connectionString: databaseUrl, max: 1 });
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  const pool = new Pool({ connectionString: url.toString(), max: maxConnections });
  return {
    pool,
    async migrateUpTo(migration?: string) {
      const end = migration === undefined ? migrations.length : migrations.findIndex((m) => m.name === migration);
      if (end < 0) throw new Error(`no migration named '${migration}'`);
      await migrate(pool, migrations.slice(0, end));
    },
    async drop() {
      await pool.end();
      await admin.query(`DROP DATABASE IF EXISTS ${name}`).catch(() => undefined);
      await admin.end();
    },
  };
}
