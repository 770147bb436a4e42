import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Pool } from 'pg';

export function createPool(databaseUrl: string | undefined, max = 10): Pool {
  if (!databaseUrl) throw new Error('DATABASE_URL is not set: start Hangar with `npm start` or point DATABASE_URL at PostgreSQL');
  const pool = new Pool({ connectionString: databaseUrl, max });
  // An idle client losing its connection (database restart) must not crash the process.
  pool.on('error', () => undefined);
  return pool;
}

export default fp(async function postgres(app: FastifyInstance) {
  const pool = createPool(app.config.databaseUrl);
  app.decorate('pg', pool);
  app.addHook('onClose', async () => pool.end());
});
