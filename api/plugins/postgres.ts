import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { createPool } from '../../store/postgres-pool';

export default fp(async function postgres(app: FastifyInstance) {
  const pool = createPool(app.config.databaseUrl);
  app.decorate('pg', pool);
  app.addHook('onClose', async () => pool.end());
});
