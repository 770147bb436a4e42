import type { FastifyInstance, LogLevel } from 'fastify';
import type { HangarConfig } from '../../domain/config';
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

/**
 * The log level of the proxied routes. A line for each proxied request costs the gateway about a
 * third of its CPU per request (bench/workloads/gateway.ts), so at the default level (info) they
 * are left out; from debug on they are written. Warnings and errors are logged as anywhere else.
 */
export function proxiedRouteLogLevel(options: AppOptions): LogLevel | undefined {
  return options.logLevel === 'info' ? 'warn' : undefined;
}
