import { ApplicationFailure } from '@temporalio/activity';
import type { SandboxControlActivities } from '../../activities/sandbox-control';
import type { ObservedFreeze, SandboxNodeActivities, StandbyAnswer } from '../../activities/sandbox-node';
import type { SandboxKey, SandboxState } from '../../domain/sandbox/sandbox';
import type { FreezeState } from '../../runtime/sandbox-runtime';

/**
 * An in-memory node for one sandbox, with the node activities' interface and the runtime's
 * freeze-generation rules, plus a control plane that records what the workflow reported. It
 * keeps the node's true history (when it ran, froze, thawed, stopped) so that a test can check
 * the workflow's reports and usage against it. Time is the test server's clock, the one the
 * workflow sees.
 */
export class SandboxNodeModel {
  /** The node's changes, in order: what it really was from each moment on. */
  readonly history: { at: number; state: SandboxState | 'STOPPED' }[] = [];
  /** Usage periods as recorded, keyed by their start (the id follows the period). */
  readonly usage = new Map<number, { from: number; to: number; state: SandboxState }>();
  readonly reportedStates: SandboxState[] = [];
  readonly problems: string[] = [];
  freeze: FreezeState = { generation: 0, frozen: false };
  lastRequestAt = 0;
  calls = 0;
  inflight = 0;
  /** The last restore done (its request's id). */
  private restoredBy?: string;
  /** How the node ended the sandbox, once it did. */
  private removal?: { stoppedAt: number; freeze: FreezeState };

  constructor(
    private readonly now: () => Promise<number>,
    /** Called inside every activity, after its effect and before its answer: the schedule's moment. */
    private readonly during: (activity: string, call: number) => Promise<'answer' | 'crash'>,
  ) {}

  get stopped(): boolean {
    return this.history.at(-1)?.state === 'STOPPED';
  }

  nodeState(): SandboxState | 'STOPPED' {
    return this.history.at(-1)?.state ?? 'STOPPED';
  }

  /** A gateway request: a frozen sandbox is thawed first; answers the thaw when there was one. */
  async request(): Promise<FreezeState | undefined> {
    if (this.stopped || this.history.length === 0) return undefined;
    const at = await this.now();
    this.lastRequestAt = at;
    if (!this.freeze.frozen) return undefined;
    this.freeze = { ...this.freeze, generation: this.freeze.generation + 1, frozen: false, thawedAt: at };
    this.history.push({ at, state: 'RUNNING' });
    return this.freeze;
  }

  /** Runs an activity's effect, then the schedule's moment; a crash loses the answer, as a dying worker does. */
  private async step<T>(name: string, effect: () => Promise<T>): Promise<T> {
    this.inflight++;
    try {
      const result = await effect();
      if ((await this.during(name, this.calls++)) === 'crash') throw ApplicationFailure.retryable(`worker died during ${name}`, 'WorkerCrash');
      return result;
    } finally {
      this.inflight--;
    }
  }

  nodeActivities(): Pick<SandboxNodeActivities, 'startSandbox' | 'enterStandby' | 'freezeState' | 'measureSandbox' | 'stopSandbox' | 'restoreSandbox'> {
    return {
      restoreSandbox: (_key: SandboxKey, request: { restoreId: string }) => this.step('restoreSandbox', () => this.restore(request.restoreId)),
      startSandbox: () =>
        this.step('startSandbox', async () => {
          if (this.history.length === 0) {
            const at = await this.now();
            this.history.push({ at, state: 'RUNNING' });
            this.lastRequestAt = at;
          }
          return { startedAt: this.history[0].at };
        }),
      enterStandby: (_key: SandboxKey, idleTimeoutMs: number, knownGeneration?: number) =>
        this.step('enterStandby', () => this.enterStandby(idleTimeoutMs, knownGeneration)),
      freezeState: () =>
        this.step('freezeState', async (): Promise<ObservedFreeze> => {
          this.mustRun('freezeState');
          return { ...this.freeze, observedAt: await this.now() };
        }),
      measureSandbox: () => this.step('measureSandbox', async () => ({ memoryBytes: 1, imageBytes: 1 })),
      stopSandbox: () =>
        this.step('stopSandbox', async () => {
          // The node's rule (runtime/removal-log.ts): a stop asked again answers what the first did.
          if (!this.removal) {
            const freeze = { ...this.freeze };
            this.history.push({ at: await this.now(), state: 'STOPPED' });
            this.removal = { stoppedAt: this.history.at(-1)!.at, freeze };
          }
          return this.removal;
        }),
    };
  }

  /**
   * The node's rules for a restore (BwrapRuntime.restoreFiles): the sandbox starts afresh, running,
   * its generations carried on (a frozen one is thawed into the next); a retried restore answers
   * as the first did.
   */
  private async restore(restoreId: string) {
    this.mustRun('restoreSandbox');
    const at = await this.now();
    if (this.restoredBy !== restoreId) {
      this.restoredBy = restoreId;
      if (this.freeze.frozen) {
        this.freeze = { ...this.freeze, generation: this.freeze.generation + 1, frozen: false, thawedAt: at };
        this.history.push({ at, state: 'RUNNING' });
      }
      this.lastRequestAt = at;
    }
    return { ...this.freeze, observedAt: at, restored: true };
  }

  /** The node's rules (activities/sandbox-node.ts): freezes only in the generation the workflow knows. */
  private async enterStandby(idleTimeoutMs: number, knownGeneration?: number): Promise<StandbyAnswer> {
    this.mustRun('enterStandby');
    if (this.freeze.frozen || (knownGeneration !== undefined && knownGeneration !== this.freeze.generation)) {
      return { frozen: this.freeze.frozen, lastUsedAt: 0, freeze: this.freeze };
    }
    const at = await this.now();
    if (at - this.lastRequestAt < idleTimeoutMs) return { frozen: false, lastUsedAt: this.lastRequestAt, freeze: this.freeze };
    this.freeze = { ...this.freeze, frozen: true, frozenAt: at };
    this.history.push({ at, state: 'STANDBY' });
    return { frozen: true, lastUsedAt: this.lastRequestAt, freeze: this.freeze };
  }

  private mustRun(activity: string): void {
    if (this.stopped) this.problems.push(`${activity} called on a stopped sandbox`);
  }

  controlActivities(): SandboxControlActivities {
    return {
      markSandboxFailed: async () => undefined,
      markSandboxRestoreFailed: async () => undefined,
      markSandboxDeleting: async () => undefined,
      noteSandboxEvent: async () => undefined,
      deleteSandboxRecord: async () => undefined,
      setSandboxState: async (_key, state) => {
        this.reportedStates.push(state);
      },
      recordSandboxUsage: async ({ from, to, state }) => {
        const known = this.usage.get(from);
        if (known && (known.to !== to || known.state !== state)) this.problems.push(`period from ${from} recorded twice, differently`);
        this.usage.set(from, { from, to, state });
      },
    };
  }

  /** Every way the recorded usage differs from the node's true history; empty when it agrees. */
  meteringProblems(): string[] {
    const problems = [...this.problems];
    const periods = [...this.usage.values()].sort((a, b) => a.from - b.from);
    const start = this.history[0]?.at;
    const end = this.history.at(-1)?.state === 'STOPPED' ? this.history.at(-1)!.at : undefined;
    if (periods.length === 0) return start !== undefined && end !== undefined && end > start ? [...problems, 'no usage recorded'] : problems;
    if (periods[0].from !== start) problems.push(`usage starts at ${periods[0].from}, the sandbox at ${start}`);
    if (periods.at(-1)!.to !== end) problems.push(`usage ends at ${periods.at(-1)!.to}, the sandbox stopped at ${end}`);
    periods.forEach((period, i) => {
      if (i > 0 && period.from !== periods[i - 1].to) problems.push(`usage has a ${period.from > periods[i - 1].to ? 'gap' : 'overlap'} at ${periods[i - 1].to}`);
      const truth = this.statesDuring(period.from, period.to);
      if (truth.some((state) => state !== period.state)) problems.push(`[${period.from}, ${period.to}) metered ${period.state}, the node was ${truth.join(' then ')}`);
    });
    return problems;
  }

  /** The node's states over [from, to). */
  private statesDuring(from: number, to: number): string[] {
    let current: string = 'NOT STARTED';
    const states: string[] = [];
    for (const change of this.history) {
      if (change.at <= from) current = change.state;
      else if (change.at < to) states.push(change.state);
    }
    return [current, ...states];
  }
}
