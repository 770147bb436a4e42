import type { FastifyInstance } from 'fastify';
import type { HangarConfig } from '../../core/config';
import { createFastify, type AppOptions } from '../fastify';
import postgres from '../plugins/postgres';
import security from '../plugins/security';
import temporal from '../plugins/temporal';

/**
 * The base every gateway listener shares: JSON errors, PostgreSQL, the same credential checks as
 * the management API, and a health route. Gateways stream bodies, so they parse nothing by default.
 */
export async function buildGatewayBase(config: HangarConfig, options: AppOptions): Promise<FastifyInstance> {
  const app = await createFastify(config, options);
  await app.register(postgres);
  await app.register(temporal);
  await app.register(security);
  app.get('/health', { config: { public: true, unversioned: true } }, async () => ({ status: 'ok' }));
  return app;
}
