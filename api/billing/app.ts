import type { FastifyInstance } from 'fastify';
import type { HangarConfig } from '../../core/config';
import { buildApp } from '../app';
import auth from '../plugins/auth';
import versioning from '../plugins/versioning';
import billingRoutes from './index';

/**
 * The base_url app with the billing routes, for billing tests and the billing benchmark. The
 * platform app mounts billing itself; until it does, the routes are mounted here the same way
 * (behind versioning and auth), so that nothing else changes when it does.
 */
export async function buildBillingApp(config: HangarConfig): Promise<FastifyInstance> {
  const app = await buildApp(config);
  if (!app.hasRoute({ method: 'GET', url: '/v0/accounts/:accountId/metrics' })) {
    await app.register(async (api) => {
      await api.register(versioning);
      await api.register(auth);
      await api.register(billingRoutes);
    });
  }
  return app;
}
