/**
 * When a lifecycle workflow records usage: at every change of what is billable (the workflow
 * does that itself) and, while nothing changes, at least once an interval, so that usage shows
 * up within a minute and a lost worker loses at most one interval of unrecorded time. Pure:
 * the workflows (deployment, sandbox, volume) run it inside Temporal's deterministic sandbox.
 */

/** The longest a billable resource goes without its usage recorded. */
export const METER_INTERVAL_MS = 60_000;

/** When the next periodic record is due; never while nothing is billable. */
export function nextMeterAt(meteredUntil: number, billable = true): number {
  return billable ? meteredUntil + METER_INTERVAL_MS : Infinity;
}

/** Whether a periodic record is due at `now`. */
export function meterDue(meteredUntil: number, now: number): boolean {
  return now - meteredUntil >= METER_INTERVAL_MS;
}
