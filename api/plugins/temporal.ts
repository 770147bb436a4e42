import { Client, Connection } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { temporalAddress, type HangarConfig } from '../../domain/config';

/** A lazy connection: the API starts (and answers) even while Temporal is still starting. */
export function createTemporalClient(config: HangarConfig): Client {
  const connection = Connection.lazy({ address: temporalAddress(config) });
  return new Client({ connection, namespace: config.temporalNamespace });
}

export default fp(async function temporal(app: FastifyInstance) {
  const client = createTemporalClient(app.config);
  app.decorate('temporal', client);
  app.addHook('onClose', async () => client.connection.close());
});
