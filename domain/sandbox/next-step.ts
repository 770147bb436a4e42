import { meterDue, nextMeterAt } from '../billing/meter-schedule';
import type { Expiry } from './expiry';
import { lastChangeAt, sandboxState, type StandbyLedger } from './lifecycle';
import type { SandboxState } from './sandbox';

/**
 * What the sandbox lifecycle workflow does next, decided from what it knows: book-keeping first
 * (asking the node, metering, persisting the state), one step a pass, then expiry, then a wait
 * for a signal, the idle deadline (a RUNNING sandbox is frozen after it), the next metering or
 * the expiry. Pure, so that it runs inside the workflow and in unit tests.
 */

/**
 * The shortest wait: a deadline closer than this is checked this much later, which idle periods
 * and ttls counted in seconds do not notice. A timer of a few ms mostly fires while the workflow
 * task that would cancel it (a touch arrived) is still running, which costs a task for nothing
 * and which Temporal's Java test server cannot even process (temporalio/sdk-java#2606).
 */
export const MIN_WAIT_MS = 1_000;

/** What the workflow knows when it decides. */
export interface SandboxWatch {
  ledger: StandbyLedger;
  /** Someone saw the sandbox running while the workflow holds it frozen: the node must be asked. */
  askNode: boolean;
  /** Usage is recorded up to here. */
  meteredUntil: number;
  /** The state last written to the resource (undefined: none written by this run yet). */
  persistedState: SandboxState | undefined;
  lastUsedAt: number;
  idleTimeoutMs: number;
  /** The earliest moment a ttl or expiration policy deletes the sandbox (domain/sandbox/expiry.ts). */
  expiry: Expiry | undefined;
}

export type SandboxStep =
  /** Ask the node how the sandbox stands. */
  | { do: 'observe-node' }
  /** Record usage up to `until`: a change of state just learnt of, or a running sandbox's interval. */
  | { do: 'meter'; until: number }
  /** Record a frozen sandbox's interval, up to the moment the node says it is still frozen. */
  | { do: 'meter-to-node-word' }
  | { do: 'persist-state'; state: SandboxState }
  | { do: 'expire'; reason: string }
  /** Wait up to `ms` for a signal; then, if `freezeWhenIdle` and the idle period is over, freeze. */
  | { do: 'wait'; ms: number; freezeWhenIdle: boolean };

/**
 * The next step. Signals handled during any await are seen by the next pass, so nothing learnt
 * during a step is left unrecorded when the loop goes on to wait or to freeze (a new freeze
 * replaces the ledger's last one, which must be metered by then).
 */
export function nextSandboxStep(watch: SandboxWatch, now: number): SandboxStep {
  const state = sandboxState(watch.ledger);
  if (watch.askNode) return { do: 'observe-node' };
  // Every change is recorded as soon as it is known, so a period never spans two.
  if (lastChangeAt(watch.ledger) > watch.meteredUntil) return { do: 'meter', until: lastChangeAt(watch.ledger) };
  // Running is certain up to now (only the workflow freezes it); standby only up to the node's word.
  if (meterDue(watch.meteredUntil, now)) return state === 'RUNNING' ? { do: 'meter', until: now } : { do: 'meter-to-node-word' };
  if (watch.persistedState !== state) return { do: 'persist-state', state };
  if (watch.expiry && watch.expiry.at <= now) return { do: 'expire', reason: `expired: ${watch.expiry.reason}` };
  const untilDeadline = Math.min(watch.expiry ? watch.expiry.at - now : Infinity, nextMeterAt(watch.meteredUntil) - now);
  if (state === 'RUNNING') {
    const untilIdle = watch.lastUsedAt + watch.idleTimeoutMs - now;
    return { do: 'wait', ms: Math.max(MIN_WAIT_MS, Math.min(untilIdle, untilDeadline)), freezeWhenIdle: true };
  }
  // Only a resume (or the node's word) makes it RUNNING; a touch or spec change re-checks the rest.
  return { do: 'wait', ms: Math.max(MIN_WAIT_MS, untilDeadline), freezeWhenIdle: false };
}

/** Whether a RUNNING sandbox unused since `lastUsedAt` is due to be frozen at `now` (the node checks again). */
export function idlePeriodOver(lastUsedAt: number, idleTimeoutMs: number, now: number): boolean {
  return now >= lastUsedAt + idleTimeoutMs;
}
