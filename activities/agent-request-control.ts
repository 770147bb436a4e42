import { nodeTaskQueue } from '../domain/config';
import { AgentRequestStore } from '../store/agent-requests';
import { asyncRequestUsageTick, type AgentRequestKey } from '../domain/agents/async-requests';
import type { ActivityDeps } from './support/activity-deps';
import { recordUsage } from './usage-metering';

/** The control-plane side of async agent requests: their metering and their recorded outcome. */
export function createAgentRequestControlActivities({ pg, config }: Pick<ActivityDeps, 'pg' | 'config'>) {
  const requests = new AgentRequestStore(pg);
  return {
    /**
     * The task queue of the node the agent's serving revision is placed on now (it moves when
     * its node is LOST); undefined when none serves or it has no node recorded.
     */
    async agentNodeQueue(key: AgentRequestKey): Promise<string | undefined> {
      const { rows } = await pg.query<{ node_id: string | null }>(
        `SELECT wr.node_id FROM resources r
           JOIN workload_revisions wr ON wr.resource_id = r.id AND wr.revision = (r.state #>> '{serving,revision}')::int
          WHERE r.id = $1`,
        [key.agentId],
      );
      const nodeId = rows[0]?.node_id;
      return nodeId ? nodeTaskQueue({ taskQueue: config.taskQueue, nodeId }) : undefined;
    },

    /** One agent_async_requests_count per request, under an id derived from the request's. */
    async meterAgentRequest(key: AgentRequestKey, acceptedAt: number): Promise<void> {
      await recordUsage(pg, asyncRequestUsageTick(key, acceptedAt));
    },

    async failAgentRequest(id: string, error: string): Promise<void> {
      await requests.recordFailure(id, error);
    },

    async recordAgentRequestCallback(id: string, outcome: { delivered: boolean; error?: string }): Promise<void> {
      await requests.recordCallback(id, outcome.delivered ? 'delivered' : 'failed', outcome.error);
    },
  };
}

export type AgentRequestControlActivities = ReturnType<typeof createAgentRequestControlActivities>;
