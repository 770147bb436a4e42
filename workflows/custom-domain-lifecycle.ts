import { condition, continueAsNew, defineSignal, proxyActivities, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { CustomDomainControlActivities } from '../activities/custom-domain-control';
import type { CustomDomainKey } from '../domain/custom-domain/custom-domain';

export interface CustomDomainLifecycleInput {
  key: CustomDomainKey;
  /** A new domain, one carried over by continue-as-new, or a cleanup. */
  phase: 'create' | 'running' | 'delete';
  /** Usage is recorded up to here (continue-as-new carries it over). */
  meteredUntil?: number;
}

/** Carries when the domain was deleted (it stopped routing then), so later processing is not billed. */
export const deleteCustomDomainSignal = defineSignal<[number]>('delete');

/** Active time is recorded at least this often, and once more at deletion. */
const METER_INTERVAL_MS = 60_000;
const MAX_HISTORY_EVENTS = 5_000;

/**
 * One custom domain's life: it routes once active, its active time is metered while it exists
 * (`custom_domain_active_time_hours`, periods with deterministic ids), and at deletion the last
 * period is recorded before the record goes.
 */
export async function customDomainLifecycle(input: CustomDomainLifecycleInput): Promise<void> {
  const control = proxyActivities<CustomDomainControlActivities>({
    startToCloseTimeout: '30s',
    retry: { initialInterval: '200ms', maximumInterval: '10s' },
  });
  const { key } = input;
  let deleting = input.phase === 'delete';
  let deletedAt: number | undefined;
  let exists = true;
  setHandler(deleteCustomDomainSignal, (at) => {
    deleting = true;
    deletedAt ??= at; // a repeated DELETE does not move the end
  });
  upsertSearchAttributes({ HangarWorkspace: [key.workspace], HangarResourceKind: ['custom_domain'], HangarResourceName: [key.name] });

  // Metering starts when the domain started routing, as the activity saw it.
  let meteredUntil = input.phase === 'create' ? await control.markCustomDomainActive(key) : (input.meteredUntil ?? Date.now());

  async function meter(until: number): Promise<void> {
    if (until <= meteredUntil) return;
    exists = await control.recordCustomDomainUsage({ key, from: meteredUntil, to: until });
    meteredUntil = until;
  }

  while (!deleting && exists) {
    if (Date.now() - meteredUntil >= METER_INTERVAL_MS) await meter(Date.now());
    if (workflowInfo().historyLength > MAX_HISTORY_EVENTS) {
      await continueAsNew<typeof customDomainLifecycle>({ ...input, phase: 'running', meteredUntil });
    }
    await condition(() => deleting, Math.max(1, meteredUntil + METER_INTERVAL_MS - Date.now()));
  }
  if (!exists) return;
  await meter(Math.min(Date.now(), deletedAt ?? Date.now()));
  await control.deleteCustomDomainRecord(key);
}
