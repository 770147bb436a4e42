import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { createClickHouse } from '../../store/clickhouse-client';

export default fp(async function clickhouse(app: FastifyInstance) {
  const client = createClickHouse(app.config);
  app.decorate('clickhouse', client);
  app.addHook('onClose', async () => client.close());
});
