import type { FastifyInstance } from 'fastify';
import provisioningRoutes from './provisioning-routes';
import integrationRoutes from './routes';

/** /v0/integrations: the catalog, connections (endpoint 12) and tenant provisionings. */
export default async function integrationsApi(app: FastifyInstance) {
  await app.register(integrationRoutes);
  await app.register(provisioningRoutes);
}
