import { Pool } from 'pg';

export function createPool(databaseUrl: string | undefined, max = 10): Pool {
  if (!databaseUrl) throw new Error('DATABASE_URL is not set: start Hangar with `npm start` or point DATABASE_URL at PostgreSQL');
  return survivingConnectionLoss(new Pool({ connectionString: databaseUrl, max }));
}

/**
 * A database restart must not crash the process. pg reports a lost connection as an 'error'
 * event, which without a listener kills Node: the pool listens on idle connections ('error' on
 * the pool), but a connection checked out (a transaction, an advisory lock held while work goes
 * on) has no listener of its own. Its holder learns of the loss from its next statement, and the
 * pool drops the broken connection when it is released.
 */
export function survivingConnectionLoss(pool: Pool): Pool {
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}
