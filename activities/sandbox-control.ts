import { ResourceStore } from '../api/management/resources/store';
import { sandboxUsageTicks, type SandboxMeterPeriod } from '../core/sandbox/metering';
import type { SandboxKey, SandboxState } from '../core/sandbox/types';
import { StateHistory } from '../db/state-history';
import type { ActivityDeps } from './deps';
import { recordWorkspaceUsage } from './usage-metering';

/** The control-plane side of a sandbox's life: its record in PostgreSQL. */
export function createSandboxControlActivities({ pg }: Pick<ActivityDeps, 'pg'>) {
  const store = new ResourceStore(pg);
  const history = new StateHistory(pg);
  return {
    async markSandboxFailed(key: SandboxKey, message: string): Promise<void> {
      await store.transition(key.id, 'FAILED', { type: 'Warning', message });
      await history.end(key.id, Date.now());
    },
    /** `changedAt`: when the workflow saw the change, where its metering switches dimension too. */
    async setSandboxState(key: SandboxKey, state: SandboxState, lastUsedAt: number, changedAt = Date.now()): Promise<void> {
      await store.mergeState(key.id, { state, lastUsedAt: new Date(lastUsedAt).toISOString() });
      await history.changeState(key.id, state, changedAt);
    },
    /** Answers when: its state history ends there, and its metering with it. */
    async markSandboxDeleting(key: SandboxKey, reason: string): Promise<number> {
      await store.transition(key.id, 'DELETING', { type: 'Normal', message: reason });
      return history.end(key.id, Date.now());
    },
    async deleteSandboxRecord(key: SandboxKey): Promise<void> {
      await store.deleteById(key.id);
    },
    /** Idempotent: a retried period produces the same event ids and is counted once. */
    async recordSandboxUsage(period: Omit<SandboxMeterPeriod, 'accountId'>): Promise<void> {
      await recordWorkspaceUsage(pg, period.key.workspaceId, (accountId) => sandboxUsageTicks({ ...period, accountId }));
    },
  };
}

export type SandboxControlActivities = ReturnType<typeof createSandboxControlActivities>;
