import { AgentRequestStore } from '../store/agent-requests';
import { asyncRequestUsageTick, type AgentRequestKey } from '../domain/agents/async-requests';
import type { ActivityDeps } from './support/activity-deps';
import { recordUsage } from './usage-metering';

/** The control-plane side of async agent requests: their metering and their recorded outcome. */
export function createAgentRequestControlActivities({ pg }: Pick<ActivityDeps, 'pg'>) {
  const requests = new AgentRequestStore(pg);
  return {
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
