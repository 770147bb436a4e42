import Fastify, { type FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { HangarConfig } from '../../core/config';
import type { AppOptions } from '../app';
import { loggerOptions } from '../app';
import errors from '../plugins/errors';
import postgres from '../plugins/postgres';
import security from '../plugins/security';
import temporal from '../plugins/temporal';
import '../types';

/**
 * The base every gateway listener shares: JSON errors, PostgreSQL, the same credential checks as
 * the management API, and a health route. Gateways stream bodies, so they parse nothing by default.
 */
export async function buildGatewayBase(config: HangarConfig, options: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(options.logLevel),
    bodyLimit: config.bodyLimitBytes,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
  });
  app.decorate('config', config);
  await app.register(errors);
  await app.register(postgres);
  await app.register(temporal);
  await app.register(security);
  app.get('/health', { config: { public: true, unversioned: true } }, async () => ({ status: 'ok' }));
  return app;
}
