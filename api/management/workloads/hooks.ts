import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { WORKLOAD_ROUTES_CHANNEL } from '../../../activities/deployment-control';
import { isWorkloadKind, workloadRouteKey, type WorkloadKind, type WorkloadSpec } from '../../../core/workloads/types';
import { ResourceStore } from '../resources/store';
import { requestWorkspace } from '../workspace-context';
import { deployIntegrationFunction, requestRemoval } from './deployments';

/**
 * The generic resource routes know nothing of deployments; these hooks, registered before those
 * routes and in their context so that they see them, connect the two:
 * - after a workload is deleted, gateways drop its route and its deployment workflow removes what runs;
 * - after a function bound to an integration connection is created or updated, it deploys the
 *   integration's built-in MCP server (a revision without a bundle).
 */
export default fp(async function workloadHooks(app: FastifyInstance) {
  const resources = new ResourceStore(app.pg);

  async function deleted(request: FastifyRequest, kind: WorkloadKind) {
    // The delete succeeded, so the caller's workspace resolves.
    const grant = requestWorkspace(request);
    const name = (request.params as { name: string }).name;
    await app.pg.query('SELECT pg_notify($1, $2)', [WORKLOAD_ROUTES_CHANNEL, workloadRouteKey(grant.id, kind, name)]);
    await requestRemoval(app.temporal, { workspace: grant.name, kind, name });
  }

  async function functionSaved(request: FastifyRequest) {
    const grant = requestWorkspace(request);
    const name = (request.body as { metadata: { name: string } }).metadata.name;
    const row = await resources.get({ workspaceId: grant.id, kind: 'functions', name });
    if (!row) return;
    const key = { id: row.id, workspace: grant.name, workspaceId: grant.id, kind: 'functions' as const, name: row.name };
    await deployIntegrationFunction(app, key, row.spec as WorkloadSpec, request.principal.clientId);
  }

  app.addHook('onResponse', async (request, reply) => {
    if (reply.statusCode !== 200) return;
    const match = /^\/v0\/([a-z]+)(\/:name)?$/.exec(request.routeOptions.url ?? '');
    if (!match || !isWorkloadKind(match[1])) return;
    const kind = match[1];
    const work =
      request.method === 'DELETE' && match[2] ? deleted(request, kind)
      : kind === 'functions' && (request.method === 'POST' || request.method === 'PUT') ? functionSaved(request)
      : undefined;
    await work?.catch((err) => request.log.warn({ err: (err as Error).message, kind }, 'could not update the deployment of a workload'));
  });
});
