import type { Pool } from 'pg';
import { InvalidInput } from '../domain/billing/errors';
import { tickEvent, type UsageTick } from '../domain/billing/metering';
import { parseEvent } from '../domain/billing/usage-events';
import { acceptUsageEvents, type AcceptResult } from '../store/usage-outbox';

export type { UsageTick } from '../domain/billing/metering';

/**
 * Internal metering: the runtimes record what a running resource used, per billing dimension and
 * period. The ticks take the same path as external events (validation, pricing, ledger, outbox,
 * flush), with ids derived from resource, dimension and period: recording a tick again is a
 * no-op, recording it again with another quantity is a UsageConflict.
 */
export async function recordUsage(pool: Pool, ticks: UsageTick | UsageTick[]): Promise<AcceptResult> {
  const list = Array.isArray(ticks) ? ticks : [ticks];
  const byAccount = new Map<string, UsageTick[]>();
  for (const tick of list) {
    const group = byAccount.get(tick.accountId);
    if (group) group.push(tick);
    else byAccount.set(tick.accountId, [tick]);
  }
  const total: AcceptResult = { accepted: 0, duplicates: 0 };
  const now = Date.now();
  for (const [accountId, group] of byAccount) {
    const events = group.map((tick, index) => {
      try {
        return parseEvent(tickEvent(tick), index, now);
      } catch (err) {
        if (err instanceof InvalidInput) throw new Error(`invalid usage tick for ${tick.resourceName}: ${err.message}`, { cause: err });
        throw err;
      }
    });
    const result = await acceptUsageEvents(pool, accountId, events);
    total.accepted += result.accepted;
    total.duplicates += result.duplicates;
  }
  return total;
}

/**
 * Records the ticks `build` makes for the account that owns a workspace, the form every runtime's
 * metering takes. Idempotent like recordUsage. Nothing is recorded once the workspace is gone,
 * and with it whom to bill.
 */
export async function recordWorkspaceUsage(pool: Pool, workspaceId: string, build: (accountId: string) => UsageTick[]): Promise<void> {
  const { rows } = await pool.query<{ account_id: string }>('SELECT account_id FROM workspaces WHERE id = $1', [workspaceId]);
  if (!rows[0]) return;
  const ticks = build(rows[0].account_id);
  if (ticks.length > 0) await recordUsage(pool, ticks);
}
