import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { forbidden, notFound } from '../../../domain/errors';
import { freeMemoryBytes, nodeState } from '../../../domain/nodes/node';
import type { Principal } from '../../../domain/principal';
import { getNode, listNodes, nodeFigures, type NodeRow } from '../../../store/nodes';
import { commonErrors } from '../common-schemas';
import { Node } from './schemas';

/**
 * The platform's runtime nodes, for account admins: the machines are shared by every account, so
 * this shows what they have and carry, never whose work it is. Draining is the operator's
 * (`npm run -s nodes -- drain <id>`, with the database), not an API call of any one account.
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
    if (!principal.accountAdmin) throw forbidden('listing the nodes needs the account admin role');
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
    { schema: { tags: ['nodes'], params: Type.Object({ nodeId: Type.String({ maxLength: 200 }) }), response: { 200: Node, ...commonErrors } } },
    async (request) => {
      adminOnly(request.principal);
      const { nodeId } = request.params as { nodeId: string };
      const row = await getNode(app.pg, nodeId);
      if (!row) throw notFound(`node '${nodeId}' not found`);
      return toNode(row);
    },
  );
}
