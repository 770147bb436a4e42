import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/** Resolves `request.principal` for every route not marked public. */
export default fp(async function auth(app: FastifyInstance) {
  app.decorateRequest('principal', null as never);
  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.config?.public || request.is404) return;
    request.principal = await app.authenticator.authenticate(request.headers);
  });
});
