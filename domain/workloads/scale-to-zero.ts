import type { WorkloadScaleState } from './workload';

/**
 * The deployment workflow's decisions about a revision that may scale to zero (`minScale: 0`):
 * when it counts as idle and is stopped, whether it can answer a request now, and which
 * revision a burst of uploads deploys. Pure, so that it runs inside the workflow and in unit tests.
 */

/** How long a revision that scales to zero may go without requests, unless the workload says otherwise. */
export const DEFAULT_IDLE_TIMEOUT_MS = 300_000;

/** What the workflow knows of the revision serving, as far as scaling to zero goes. */
export interface ServingScale {
  /** The revision serving can be started again: it scales to zero. */
  restartable: boolean;
  scale: WorkloadScaleState;
  /** The latest gateway touch (or start): the idle period counts from here. */
  lastUsedAt: number;
}

/** When the revision serving is stopped for being idle; never for one that cannot restart or is already at zero. */
export function idleDeadline(serving: ServingScale, idleTimeoutMs: number): number {
  return serving.restartable && serving.scale === 'RUNNING' ? serving.lastUsedAt + idleTimeoutMs : Infinity;
}

/**
 * Whether the revision serving is to be stopped at `now`. Asked after the timer fires: a touch
 * that arrived meanwhile moved the deadline, and only a deadline still past counts.
 */
export function isIdle(serving: ServingScale, idleTimeoutMs: number, now: number): boolean {
  return now >= idleDeadline(serving, idleTimeoutMs);
}

/**
 * Whether a gateway's request can be handed the serving process's socket now: a revision serves,
 * runs, and is not being stopped (a stop in progress answers after the next start instead).
 */
export function answersRequests(state: { serving: boolean; scale: WorkloadScaleState; stopping: boolean }): boolean {
  return state.serving && state.scale === 'RUNNING' && !state.stopping;
}

/**
 * Of the revisions uploaded since the last deployment, the one to deploy: only the newest counts
 * (the others collapse into it), and only if it is newer than the revision serving.
 */
export function revisionToDeploy(uploaded: number[], servingRevision: number | undefined): number | undefined {
  if (uploaded.length === 0) return undefined;
  const newest = Math.max(...uploaded);
  return servingRevision !== undefined && newest <= servingRevision ? undefined : newest;
}

/** The event of a revision stopped for being idle. */
export function scaledToZeroMessage(revision: number, idleTimeoutMs: number): string {
  return `revision ${revision}: scaled to zero after ${Math.round(idleTimeoutMs / 1000)} s without requests`;
}
