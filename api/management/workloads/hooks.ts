import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { isWorkloadKind, type WorkloadKind, type WorkloadSpec } from '../../../domain/workloads/workload';
import { ResourceStore } from '../../../store/resources';
import { requestWorkspace } from '../workspace-context';
import { deployWithoutBundle, redeployForNetworkChange, requestRemoval } from '../../../control-plane/deployments';

/**
 * The generic resource routes know nothing of deployments; these hooks, registered before those
 * routes and in their context so that they see them, connect the two:
 * - after a workload is deleted, its deployment workflow removes what runs;
 * - after a workload that needs no bundle (a function bound to an integration connection, a
 *   provider model) is created or updated, it deploys its spec (a revision without a bundle);
 * - after an update changes the `spec.network` of one deployed from a bundle, the same code is
 *   deployed again with the new spec (a new revision).
 */
export default fp(async function workloadHooks(app: FastifyInstance) {
  const resources = new ResourceStore(app.pg);

  async function deleted(request: FastifyRequest, kind: WorkloadKind) {
    // The delete succeeded, so the caller's workspace resolves; the store told the gateways.
    const grant = requestWorkspace(request);
    const name = (request.params as { name: string }).name;
    await requestRemoval(app.temporal, { workspace: grant.name, kind, name });
  }

  async function saved(request: FastifyRequest, kind: WorkloadKind) {
    const grant = requestWorkspace(request);
    const name = (request.body as { metadata: { name: string } }).metadata.name;
    const row = await resources.get({ workspaceId: grant.id, kind, name });
    if (!row) return;
    const key = { id: row.id, workspace: grant.name, workspaceId: grant.id, kind, name: row.name };
    await deployWithoutBundle(app, key, row.spec as WorkloadSpec, request.principal.clientId);
    await redeployForNetworkChange(app, key, row.spec as WorkloadSpec, request.principal.clientId);
  }

  app.addHook('onResponse', async (request, reply) => {
    if (reply.statusCode !== 200) return;
    const match = /^\/v0\/([a-z]+)(\/:name)?$/.exec(request.routeOptions.url ?? '');
    if (!match || !isWorkloadKind(match[1])) return;
    const kind = match[1];
    const work =
      request.method === 'DELETE' && match[2] ? deleted(request, kind)
      : request.method === 'POST' || request.method === 'PUT' ? saved(request, kind)
      : undefined;
    await work?.catch((err) => request.log.warn({ err: (err as Error).message, kind }, 'could not update the deployment of a workload'));
  });
});
