import type { SandboxState } from './sandbox';

/**
 * What the sandbox lifecycle workflow knows of its node's freezes and thaws, and the decisions
 * it draws from them. Pure, so that it runs inside the workflow and in unit tests.
 *
 * The node numbers freeze cycles (runtime FreezeState): a freeze is known by the generation
 * current when it happened, and the thaw that ends it moves the generation on. The workflow hears
 * of a freeze from its own enterStandby and of a thaw from the gateway's `resumed` signal (or from
 * the node when it asks), in either order: a `resumed` may arrive while the workflow still waits
 * for enterStandby's answer. Comparing generations, never the order of arrival, makes the state
 * the workflow reports the node's state by construction.
 */

/** One freeze or thaw: the generation it belongs to and when it happened, by the node's clock. */
export interface FreezeMark {
  generation: number;
  at: number;
}

export interface StandbyLedger {
  /** The latest freeze the workflow made. */
  frozen?: FreezeMark;
  /** The latest thaw it heard of; it ended `frozen` when its generation is higher. */
  thawed?: FreezeMark;
}

export interface UsagePeriod {
  from: number;
  to: number;
  state: SandboxState;
}

/**
 * Where a sandbox stands in its freeze cycles, as its node records it. Every thaw of a frozen
 * sandbox moves the generation on by one; a freeze belongs to the generation current when it
 * happened, so the thaw that ended it has a higher one.
 */
export interface FreezeState {
  generation: number;
  frozen: boolean;
  /** The latest freeze (of this generation when frozen, of the one before when not), node clock. */
  frozenAt?: number;
  /** The latest thaw (into this generation), node clock. */
  thawedAt?: number;
}

function isThawed(ledger: StandbyLedger): boolean {
  return ledger.frozen !== undefined && ledger.thawed !== undefined && ledger.thawed.generation > ledger.frozen.generation;
}

/** STANDBY exactly while the latest freeze has not been ended by a thaw. */
export function sandboxState(ledger: StandbyLedger): SandboxState {
  return ledger.frozen && !isThawed(ledger) ? 'STANDBY' : 'RUNNING';
}

/** Later generations win; a repeated or older mark (a retried answer, a late signal) changes nothing. */
function later(current: FreezeMark | undefined, next: FreezeMark): FreezeMark {
  return current && current.generation >= next.generation ? current : next;
}

export function noteFreeze(ledger: StandbyLedger, mark: FreezeMark): StandbyLedger {
  return { ...ledger, frozen: later(ledger.frozen, mark) };
}

export function noteThaw(ledger: StandbyLedger, mark: FreezeMark): StandbyLedger {
  return { ...ledger, thawed: later(ledger.thawed, mark) };
}

/**
 * Takes in what the node said: its latest freeze, and the thaw that ended it, whoever asked for
 * them and whether anyone signalled (a gateway may die between thawing and signalling).
 */
export function noteObserved(ledger: StandbyLedger, seen: FreezeState): StandbyLedger {
  let next = ledger;
  if (seen.frozenAt !== undefined) next = noteFreeze(next, { generation: seen.frozen ? seen.generation : seen.generation - 1, at: seen.frozenAt });
  if (!seen.frozen && seen.thawedAt !== undefined) next = noteThaw(next, { generation: seen.generation, at: seen.thawedAt });
  return next;
}

/**
 * The generation the workflow believes the node is in. The node starts a freeze only in that
 * generation (see enterStandby), so no freeze cycle can pass unseen between two the workflow knows.
 */
export function knownGeneration(ledger: StandbyLedger): number {
  return Math.max(ledger.frozen?.generation ?? 0, ledger.thawed?.generation ?? 0);
}

/** When the state last changed (0 before any freeze): usage is recorded up to there at once. */
export function lastChangeAt(ledger: StandbyLedger): number {
  if (!ledger.frozen) return 0;
  return isThawed(ledger) ? Math.max(ledger.frozen.at, ledger.thawed!.at) : ledger.frozen.at;
}

/**
 * Splits [from, until) into the states the node had. The workflow records usage at each change
 * it learns of, so at most the latest freeze and the thaw that ended it fall inside; a moment
 * before `from` (a node clock behind the workflow's) counts as `from`.
 */
export function usagePeriods(ledger: StandbyLedger, from: number, until: number): UsagePeriod[] {
  if (until <= from) return [];
  const changes: { at: number; state: SandboxState }[] = [];
  if (ledger.frozen) changes.push({ at: ledger.frozen.at, state: 'STANDBY' });
  if (isThawed(ledger)) changes.push({ at: lastChangeAt(ledger), state: 'RUNNING' });
  let state: SandboxState = 'RUNNING';
  let start = from;
  const periods: UsagePeriod[] = [];
  for (const change of changes) {
    if (change.at <= from) {
      state = change.state;
      continue;
    }
    if (change.at >= until) break;
    if (change.state !== state) periods.push({ from: start, to: change.at, state });
    start = change.at;
    state = change.state;
  }
  periods.push({ from: start, to: until, state });
  return periods;
}
