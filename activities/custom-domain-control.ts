import type { Pool } from 'pg';
import { ResourceStore } from '../store/resources';
import { customDomainUsageTicks, type CustomDomainKey, type CustomDomainMeterPeriod } from '../domain/custom-domain/custom-domain';
import { StateHistory } from '../store/state-history';
import { recordWorkspaceUsage } from './usage-metering';

/** The control-plane side of a custom domain's life: its record, the gateways' routes, its usage. */
export function createCustomDomainControlActivities({ pg }: { pg: Pool }) {
  const store = new ResourceStore(pg);
  const history = new StateHistory(pg);

  return {
    /**
     * The domain routes from here on; answers since when (epoch ms), where its metering starts.
     * One deleted meanwhile stays DELETING.
     */
    async markCustomDomainActive(key: CustomDomainKey): Promise<number> {
      await store.transition(key.id, 'DEPLOYED', { type: 'Normal', message: 'routing requests for the domain' }, undefined, 'DEPLOYING');
      const domain = { workspaceId: key.workspaceId, resourceType: 'custom_domain' as const, resourceUuid: key.id, resourceName: key.name };
      return history.enter(domain, { state: 'ACTIVE', memoryMb: 0, storedBytes: 0 }, Date.now());
    },
    async deleteCustomDomainRecord(key: CustomDomainKey): Promise<void> {
      await store.deleteById(key.id);
    },
    /**
     * Idempotent: a retried period produces the same event ids and is counted once. Answers
     * whether the domain still exists: a record gone without a delete signal (its workspace was
     * deleted) ends the metering.
     */
    async recordCustomDomainUsage(period: Omit<CustomDomainMeterPeriod, 'accountId'>): Promise<boolean> {
      await recordWorkspaceUsage(pg, period.key.workspaceId, (accountId) => customDomainUsageTicks({ ...period, accountId }));
      const { rowCount } = await pg.query('SELECT 1 FROM resources WHERE id = $1', [period.key.id]);
      return rowCount === 1;
    },
  };
}

export type CustomDomainControlActivities = ReturnType<typeof createCustomDomainControlActivities>;
