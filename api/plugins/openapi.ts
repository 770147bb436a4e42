import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { runOpenApiDocument } from '../gateway/run-openapi';
import { sandboxOpenApiDocument } from '../gateway/sandbox-openapi';

/** Where the management API serves the sandbox API's document, for /docs. */
export const SANDBOX_DOCUMENT_PATH = '/openapi/sandbox.json';
/** Where it serves the run_url gateway's document, for /docs. */
export const RUN_DOCUMENT_PATH = '/openapi/run.json';

/**
 * The OpenAPI document is generated from the route schemas (the single source of validation) and
 * served at /openapi.json, browsable at /docs beside the sandbox API's document (generated from
 * the sandbox agent's contract) and the run_url gateway's. Registered before any route so it sees them all.
 */
export default fp(async function openapi(app: FastifyInstance) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Hangar API',
        version: '2026-04-16',
        description:
          'Management (/v0), billing and OAuth endpoints of Hangar. Send `Service-Version` to pin a version; ' +
          'credentials go in `Authorization` or `X-Service-Authorization` as `Bearer <token>`.',
      },
      servers: [{ url: app.config.baseUrl }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'An API key or an access token (JWT).' },
        },
      },
      security: [{ bearer: [] }],
    },
  });
  // The documents in one browser: the management API's, the sandbox API's and the run_url
  // gateway's (each gateway serves its own at its /openapi.json; a copy here spares the browser a
  // cross-origin fetch).
  const documents = [
    { url: '/openapi.json', name: 'Management API' },
    { url: SANDBOX_DOCUMENT_PATH, name: 'Sandbox API' },
    { url: RUN_DOCUMENT_PATH, name: 'Run gateway (run_url)' },
  ];
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list', urls: documents } });
  app.get('/openapi.json', { schema: { hide: true }, config: { public: true, unversioned: true } }, async () => app.swagger());
  const sandboxDocument = sandboxOpenApiDocument(app.config);
  app.get(SANDBOX_DOCUMENT_PATH, { schema: { hide: true }, config: { public: true, unversioned: true } }, async () => sandboxDocument);
  const runDocument = runOpenApiDocument(app.config);
  app.get(RUN_DOCUMENT_PATH, { schema: { hide: true }, config: { public: true, unversioned: true } }, async () => runDocument);
});
