import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { forbidden, notFound } from '../../../domain/errors';
import { freeMemoryBytes, nodeState } from '../../../domain/nodes/node';
import type { Principal } from '../../../domain/principal';
import { getNode, listNodes, nodeFigures, setNodeDrained, type NodeRow } from '../../../store/nodes';
import { commonErrors } from '../common-schemas';
import { Node, NodeParams } from './schemas';

/**
 * The platform's runtime nodes, for account admins: the machines are shared by every account, so
 * this shows what they have and carry, never whose work it is. An account admin is the operator
 * here: draining a node (`hangar node drain <id>`) stops placements on it for every account.
 */
export default async function nodeRoutes(app: FastifyInstance) {
  const lostAfter = app.config.nodeLostSeconds;
  const toNode = (row: NodeRow) => {
    const { capacity, load } = nodeFigures(row);
    return {
      id: row.id,
      state: nodeState(row.silent_seconds, lostAfter),
      drained: row.drained_at !== null,
      region: row.region,
      labels: row.labels,
      taskQueue: row.task_queue,
      capacity,
      load: { ...load, memoryFreeBytes: freeMemoryBytes(capacity, load) },
      startedAt: row.started_at.toISOString(),
      lastHeartbeatAt: row.heartbeat_at.toISOString(),
      ...(row.drained_at ? { drainedAt: row.drained_at.toISOString() } : {}),
    };
  };
  const adminOnly = (principal: Principal) => {
    if (!principal.accountAdmin) throw forbidden('the nodes are for account admins: use an API key of an account admin');
  };
  const drainRoute = (drained: boolean) => ({
    schema: {
      tags: ['nodes'],
      summary: drained ? 'Drain a node: nothing new is placed on it; what it runs stays' : "Lift a node's drain: it takes new work again",
      params: NodeParams,
      response: { 200: Node, ...commonErrors },
    },
  });
  const setDrained = (drained: boolean) => async (request: { principal: Principal; params: unknown }) => {
    adminOnly(request.principal);
    const { nodeId } = request.params as { nodeId: string };
    const row = await setNodeDrained(app.pg, nodeId, drained);
    if (!row) throw notFound(`node '${nodeId}' not found: see GET /v0/nodes`);
    return toNode(row);
  };

  app.get(
    '/v0/nodes',
    { schema: { tags: ['nodes'], summary: "The platform's runtime nodes, with their state, capacity and load", response: { 200: Type.Array(Node), ...commonErrors } } },
    async (request) => {
      adminOnly(request.principal);
      return (await listNodes(app.pg)).map(toNode);
    },
  );

  app.get(
    '/v0/nodes/:nodeId',
    { schema: { tags: ['nodes'], params: NodeParams, response: { 200: Node, ...commonErrors } } },
    async (request) => {
      adminOnly(request.principal);
      const { nodeId } = request.params as { nodeId: string };
      const row = await getNode(app.pg, nodeId);
      if (!row) throw notFound(`node '${nodeId}' not found`);
      return toNode(row);
    },
  );

  // Both are idempotent: draining a drained node keeps its first drainedAt.
  app.post('/v0/nodes/:nodeId/drain', drainRoute(true), setDrained(true));
  app.post('/v0/nodes/:nodeId/undrain', drainRoute(false), setDrained(false));
}
