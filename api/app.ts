import formbody from '@fastify/formbody';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { HangarConfig } from '../core/config';
import { healthRoutes } from './health';
import managementApi from './management';
import auth from './plugins/auth';
import clickhouse from './plugins/clickhouse';
import errors from './plugins/errors';
import inputHygiene from './plugins/input-hygiene';
import openapi from './plugins/openapi';
import postgres from './plugins/postgres';
import security from './plugins/security';
import temporal from './plugins/temporal';
import versioning from './plugins/versioning';
import './types';

export interface AppOptions {
  /** Log level; no logging when absent (tests). */
  logLevel?: string;
}

/** Never log credentials: request logs carry method, path (no query) and id only. */
export function loggerOptions(level: string | undefined): FastifyServerOptions['logger'] {
  if (!level) return false;
  return {
    level,
    serializers: {
      req: (req: { method: string; url: string; id: string }) => ({ method: req.method, url: req.url.split('?')[0], id: req.id }),
    },
  };
}

/**
 * The base_url application: management API (/v0), billing, OAuth and discovery. Infrastructure
 * plugins are registered first; the versioned, authenticated API lives in its own context so
 * that health, docs and discovery stay public.
 */
export async function buildApp(config: HangarConfig, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(options.logLevel),
    bodyLimit: config.bodyLimitBytes,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', allErrors: false } },
  });
  app.decorate('config', config);
  await app.register(errors);
  await app.register(postgres);
  await app.register(clickhouse);
  await app.register(temporal);
  await app.register(security);
  await app.register(formbody, { bodyLimit: config.bodyLimitBytes });
  await app.register(openapi);
  await app.register(healthRoutes);
  await app.register(async function versionedApi(api) {
    await api.register(versioning);
    await api.register(auth);
    await api.register(inputHygiene);
    await api.register(managementApi);
  });
  return app;
}
