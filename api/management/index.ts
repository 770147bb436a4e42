import type { FastifyInstance } from 'fastify';
import accountRoutes from './accounts/routes';
import customDomainRoutes from './custom-domains/routes';
import imageRoutes from './images/routes';
import integrationsApi from './integrations';
import nodeRoutes from './nodes/routes';
import oauthRoutes from './oauth/routes';
import { RESOURCE_KINDS } from './resources/kinds';
import { resourceRoutes } from './resources/routes';
import previewRoutes from './sandboxes/preview-routes';
import sandboxRoutes from './sandboxes/routes';
import serviceAccountRoutes from './service-accounts/routes';
import snapshotRoutes from './snapshots/routes';
import volumeRoutes from './volumes/routes';
import callbackSecretRoutes from './workspaces/callback-secret-routes';
import workspaceRoutes from './workspaces/routes';
import workloadHooks from './workloads/hooks';
import workloadRoutes from './workloads/routes';

/** The /v0 management API. */
export default async function managementApi(app: FastifyInstance) {
  await app.register(oauthRoutes);
  await app.register(accountRoutes);
  await app.register(workspaceRoutes);
  await app.register(callbackSecretRoutes);
  await app.register(serviceAccountRoutes);
  await app.register(workloadHooks);
  for (const kind of RESOURCE_KINDS) await app.register(resourceRoutes(kind));
  await app.register(workloadRoutes);
  await app.register(sandboxRoutes);
  await app.register(previewRoutes);
  await app.register(snapshotRoutes);
  await app.register(imageRoutes);
  await app.register(volumeRoutes);
  await app.register(customDomainRoutes);
  await app.register(integrationsApi);
  await app.register(nodeRoutes);
}
