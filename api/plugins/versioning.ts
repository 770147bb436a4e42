import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { DEFAULT_API_VERSION, resolveApiVersion } from '../../domain/versions';

/**
 * Service-Version selection. Runs before authentication so that a client pinned to an unknown
 * version learns that first. Every versioned response names the version that served it.
 */
export default fp(async function versioning(app: FastifyInstance) {
  app.decorateRequest('apiVersion', DEFAULT_API_VERSION);
  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config?.unversioned || request.is404) return;
    const header = request.headers['service-version'];
    const resolution = resolveApiVersion(Array.isArray(header) ? header[0] : header);
    if (!resolution.ok) {
      return reply.status(400).send({ error: 'invalid_api_version', message: resolution.message });
    }
    request.apiVersion = resolution.version;
    reply.header('Service-Version', resolution.version);
  });
});
