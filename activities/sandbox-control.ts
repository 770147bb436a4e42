import { ResourceStore } from '../api/management/resources/store';
import { sandboxUsageTicks, type SandboxMeterPeriod } from '../core/sandbox/metering';
import type { SandboxKey, SandboxState } from '../core/sandbox/types';
import type { ActivityDeps } from './deps';
import { recordWorkspaceUsage } from './usage-metering';

/** The control-plane side of a sandbox's life: its record in PostgreSQL. */
export function createSandboxControlActivities({ pg }: Pick<ActivityDeps, 'pg'>) {
  const store = new ResourceStore(pg);
  return {
    async markSandboxFailed(key: SandboxKey, message: string): Promise<void> {
      await store.transition(key.id, 'FAILED', { type: 'Warning', message });
    },
    async setSandboxState(key: SandboxKey, state: SandboxState, lastUsedAt: number): Promise<void> {
      await store.mergeState(key.id, { state, lastUsedAt: new Date(lastUsedAt).toISOString() });
    },
    async markSandboxDeleting(key: SandboxKey, reason: string): Promise<void> {
      await store.transition(key.id, 'DELETING', { type: 'Normal', message: reason });
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
