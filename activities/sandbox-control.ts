import { ResourceStore } from '../store/resources';
import { sandboxUsageTicks, type SandboxMeterPeriod } from '../domain/sandbox/metering';
import type { SandboxKey, SandboxState } from '../domain/sandbox/sandbox';
import { StateHistory } from '../store/state-history';
import type { ActivityDeps } from './support/activity-deps';
import { recordWorkspaceUsage } from './usage-metering';

/** The control-plane side of a sandbox's life: its record in PostgreSQL. */
export function createSandboxControlActivities({ pg }: Pick<ActivityDeps, 'pg'>) {
  const store = new ResourceStore(pg);
  const history = new StateHistory(pg);
  return {
    /** Only a sandbox still starting: one whose deletion was asked for meanwhile stays DELETING. */
    async markSandboxFailed(key: SandboxKey, message: string): Promise<void> {
      await store.transition(key.id, 'FAILED', { type: 'Warning', message }, undefined, 'DEPLOYING');
      await history.end(key.id, Date.now());
    },
    /** A restore that ended its processes and could not start them again: the sandbox FAILED, saying why. */
    async markSandboxRestoreFailed(key: SandboxKey, message: string): Promise<void> {
      await store.transition(key.id, 'FAILED', { type: 'Warning', message }, undefined, 'DEPLOYED');
      await history.end(key.id, Date.now());
    },
    async setSandboxState(key: SandboxKey, state: SandboxState, lastUsedAt: number): Promise<void> {
      await store.mergeState(key.id, { state, lastUsedAt: new Date(lastUsedAt).toISOString() });
    },
    /** An event on the sandbox under its current status (e.g. a network policy the node has not taken yet). */
    async noteSandboxEvent(key: SandboxKey, type: 'Normal' | 'Warning', message: string): Promise<void> {
      await store.note(key.id, { type, message }, {});
    },
    async markSandboxDeleting(key: SandboxKey, reason: string): Promise<void> {
      await store.transition(key.id, 'DELETING', { type: 'Normal', message: reason });
    },
    /** `stoppedAt`: when the node removed it, where its metering ended; its state history ends there too. */
    async deleteSandboxRecord(key: SandboxKey, stoppedAt?: number): Promise<void> {
      if (stoppedAt !== undefined) await history.end(key.id, stoppedAt);
      await store.deleteById(key.id);
    },
    /**
     * Idempotent: a retried period produces the same event ids and is counted once. The state
     * history takes the period's state from its start, so that history and bills split at the
     * same instants, the node's (freeze, thaw), whenever the workflow learnt of them.
     */
    async recordSandboxUsage(period: Omit<SandboxMeterPeriod, 'accountId'>): Promise<void> {
      await history.changeState(period.key.id, period.state, period.from);
      await recordWorkspaceUsage(pg, period.key.workspaceId, (accountId) => sandboxUsageTicks({ ...period, accountId }));
    },
  };
}

export type SandboxControlActivities = ReturnType<typeof createSandboxControlActivities>;
