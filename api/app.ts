import formbody from '@fastify/formbody';
import type { FastifyInstance } from 'fastify';
import type { HangarConfig } from '../domain/config';
import billingRoutes from './billing';
import consoleRoutes from './console';
import { createFastify, type AppOptions } from './fastify';
import { healthRoutes } from './health';
import jobExecutionRoutes from './jobs/routes';
import managementApi from './management';
import auth from './plugins/auth';
import clickhouse from './plugins/clickhouse';
import inputHygiene from './plugins/input-hygiene';
import openapi from './plugins/openapi';
import postgres from './plugins/postgres';
import security from './plugins/security';
import temporal from './plugins/temporal';
import versioning from './plugins/versioning';

/**
 * The base_url application: management API (/v0), billing, OAuth and discovery. Infrastructure
 * plugins are registered first; the versioned, authenticated API lives in its own context so
 * that health, docs and discovery stay public.
 */
export async function buildApp(config: HangarConfig, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = await createFastify(config, options);
  // The API speaks JSON (and forms, for OAuth); anything else is 415 rather than a string body.
  app.removeContentTypeParser('text/plain');
  await app.register(postgres);
  await app.register(clickhouse);
  await app.register(temporal);
  await app.register(security);
  await app.register(formbody, { bodyLimit: config.bodyLimitBytes });
  await app.register(openapi);
  await app.register(healthRoutes);
  await app.register(consoleRoutes);
  await app.register(async function versionedApi(api) {
    await api.register(versioning);
    await api.register(auth);
    await api.register(inputHygiene);
    await api.register(managementApi);
    await api.register(jobExecutionRoutes);
    await api.register(billingRoutes);
  });
  return app;
}
