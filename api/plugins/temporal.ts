import { Client, Connection } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { HangarConfig } from '../../domain/config';

export function temporalAddress(config: HangarConfig): string {
  return config.temporalAddress ?? `127.0.0.1:${config.temporalPort}`;
}

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
