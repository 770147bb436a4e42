/**
 * When a supervised process that died is started again, after how long, and when to give up, as
 * systemd's Restart=on-failure with RestartSec, a growing delay and StartLimitBurst in
 * StartLimitIntervalSec would decide. Pure: the supervisors (scripts/stack/service-supervisor.ts
 * for PostgreSQL, ClickHouse and Temporal, scripts/supervised-child.ts for the platform processes)
 * do the waiting and the launching.
 */
export interface RestartPolicy {
  /** Delay before the first restart of a crash series; each further crash in a row doubles it. */
  firstDelayMs: number;
  maxDelayMs: number;
  /** A process that ran this long before dying was healthy: its crash starts a new series. */
  stableAfterMs: number;
  /** At most `restarts` restarts within any `windowMs`; the next crash gives up. None: never give up. */
  budget?: { restarts: number; windowMs: number };
}

/** For the local services: quick first retries, and stop after a handful that did not hold. */
export const SERVICE_RESTART_POLICY: RestartPolicy = {
  firstDelayMs: 500,
  maxDelayMs: 10_000,
  stableAfterMs: 60_000,
  budget: { restarts: 5, windowMs: 60_000 },
};

export interface RestartState {
  /** Crashes since the process last ran for stableAfterMs (0 before any). */
  crashesInARow: number;
  /** When each restart still inside the budget's window was granted. */
  restartTimes: readonly number[];
}

export const NO_CRASH_YET: RestartState = { crashesInARow: 0, restartTimes: [] };

export type RestartDecision =
  | {
      restart: true;
      delayMs: number;
      /** This restart's number within the window, counting it (1 for the first). */
      restartInWindow: number;
    }
  | {
      restart: false;
      /** Restarts already spent within the window. */
      restartsInWindow: number;
    };

export interface Crash {
  /** When the process died (ms, not before an earlier crash given to the same state). */
  at: number;
  /** How long it had been running (ready or not) when it died. */
  upForMs: number;
}

/** Delay before restart number `crashesInARow` of a series: first, 2 x first, 4 x first, ... at most max. */
export function restartDelayMs(policy: RestartPolicy, crashesInARow: number): number {
  return Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** Math.max(0, crashesInARow - 1));
}

/** What to do about `crash`, and the state to hand to the next call. */
export function decideRestart(policy: RestartPolicy, state: RestartState, crash: Crash): { decision: RestartDecision; state: RestartState } {
  const crashesInARow = crash.upForMs >= policy.stableAfterMs ? 1 : state.crashesInARow + 1;
  const { budget } = policy;
  const recent = budget ? state.restartTimes.filter((at) => at > crash.at - budget.windowMs) : [];
  if (budget && recent.length >= budget.restarts) {
    return { decision: { restart: false, restartsInWindow: recent.length }, state: { crashesInARow, restartTimes: recent } };
  }
  return {
    decision: { restart: true, delayMs: restartDelayMs(policy, crashesInARow), restartInWindow: recent.length + 1 },
    state: { crashesInARow, restartTimes: budget ? [...recent, crash.at] : [] },
  };
}

/** "restart 2 of 5 in 60s", or "restart 2" without a budget: for the supervisors' log lines. */
export function describeRestart(policy: RestartPolicy, restartInWindow: number): string {
  const { budget } = policy;
  return budget ? `restart ${restartInWindow} of ${budget.restarts} in ${budget.windowMs / 1000}s` : `restart ${restartInWindow}`;
}
