import { ApplicationFailure, Context } from '@temporalio/activity';
import type { DeploymentControlActivities } from '../../activities/deployment-control';
import type { DeploymentNodeActivities, StartRevisionInput } from '../../activities/deployment-node';
import type { WorkloadMeterPeriod, WorkloadUsage } from '../../domain/workloads/metering';
import { revisionSandboxId, type RevisionRecord, type WorkloadKey, type WorkloadScaleState } from '../../domain/workloads/workload';

type Period = Omit<WorkloadMeterPeriod, 'accountId'>;

/**
 * An in-memory node and control plane for one workload's deployments, with the activities'
 * interfaces. It keeps the node's true history (when each revision's process started and stopped)
 * and what the workflow reported (the scale the gateways were told, the usage recorded), so that
 * a test can check the reports against the truth. Time is the test server's clock, the one the
 * workflow sees.
 *
 * Every activity is idempotent, as the real ones are: a retry after a lost answer finds its
 * effect done. What the workflow can know is an answer that reached it, so each process's
 * billable life is taken from the answers (`acknowledged`), not from the effects: a start whose
 * answer was lost is not the workflow's to bill until the retry answers.
 */
export class DeploymentNodeModel {
  /** Processes on the node by sandbox id, with the socket of their current start. */
  readonly processes = new Map<string, { socketPath: string }>();
  /** The node's changes, in order. */
  readonly history: { at: number; sandboxId: string; running: boolean }[] = [];
  /**
   * When the workflow learnt of each change that makes compute billable or not: a process it
   * serves from became RUNNING (deployed or woken) or was removed. The answer is known by its
   * activity; `at` is the workflow's clock when it took the answer in (see `learnt`).
   */
  readonly acknowledged: { activityId: string; at?: number; sandboxId: string; running: boolean }[] = [];
  /** Usage periods as recorded, keyed by their start (the period's id follows its start). */
  readonly usage = new Map<number, Period>();
  /** What the gateways were told last: the serving revision's scale. */
  reportedScale: WorkloadScaleState | null = null;
  servingSandbox: string | undefined;
  deletedAt: number | undefined;
  readonly problems: string[] = [];
  /** Starts asked to fail (a command that exits), counted down by the next starts. */
  failingStarts = 0;
  calls = 0;
  inflight = 0;
  private starts = 0;

  constructor(
    readonly key: WorkloadKey,
    private readonly now: () => Promise<number>,
    /** Called inside every activity, after its effect and before its answer: the schedule's moment. */
    private readonly during: (activity: string, call: number) => Promise<'answer' | 'crash'>,
  ) {}

  revision(revision: number): RevisionRecord {
    return { resourceId: this.key.id, revision, bundleSha256: `sha-${revision}`, bundleBytes: 1_000, spec: { runtime: { minScale: 0, memory: 256 } } };
  }

  /** Runs an activity's effect, then the schedule's moment; a crash loses the answer, as a dying worker does. */
  private async step<T>(name: string, effect: () => Promise<T>, answered?: (activityId: string) => void): Promise<T> {
    this.inflight++;
    try {
      const result = await effect();
      if ((await this.during(name, this.calls++)) === 'crash') throw ApplicationFailure.retryable(`worker died during ${name}`, 'WorkerCrash');
      answered?.(Context.current().info.activityId);
      return result;
    } finally {
      this.inflight--;
    }
  }

  private async start(input: StartRevisionInput): Promise<string> {
    if (this.deletedAt !== undefined) this.problems.push(`revision ${input.revision} started after the workload was deleted`);
    const sandboxId = revisionSandboxId(input.key.id, input.revision);
    const running = this.processes.get(sandboxId);
    if (running) return running.socketPath;
    if (this.failingStarts > 0) {
      this.failingStarts--;
      throw ApplicationFailure.nonRetryable('the command exited with code 1 before listening', 'WorkloadDeployError');
    }
    const socketPath = `/sockets/${sandboxId}-${this.starts++}.sock`;
    this.processes.set(sandboxId, { socketPath });
    this.history.push({ at: await this.now(), sandboxId, running: true });
    return socketPath;
  }

  private async remove(sandboxId: string): Promise<void> {
    if (!this.processes.delete(sandboxId)) return;
    this.history.push({ at: await this.now(), sandboxId, running: false });
  }

  /** Whether a socket an update answered reaches a process running now. */
  reaches(socketPath: string): boolean {
    return [...this.processes.values()].some((process) => process.socketPath === socketPath);
  }

  nodeActivities(): Pick<DeploymentNodeActivities, 'unpackBundle' | 'prepareBuiltin' | 'startRevision' | 'wakeRevision' | 'removeRevision'> {
    return {
      unpackBundle: (sha256) => this.step('unpackBundle', async () => `/bundles/${sha256}`),
      prepareBuiltin: () => this.step('prepareBuiltin', async () => '/builtin'),
      startRevision: (input) => this.step('startRevision', () => this.start(input)),
      // The real activity records RUNNING itself (gateways forward on it) once the process listens.
      wakeRevision: (input) =>
        this.step(
          'wakeRevision',
          async () => {
            const socketPath = await this.start(input);
            this.reportedScale = 'RUNNING';
            return socketPath;
          },
          (activityId) => this.acknowledged.push({ activityId, sandboxId: revisionSandboxId(input.key.id, input.revision), running: true }),
        ),
      removeRevision: (sandboxId) =>
        this.step(
          'removeRevision',
          () => this.remove(sandboxId),
          (activityId) => this.acknowledged.push({ activityId, sandboxId, running: false }),
        ),
    };
  }

  controlActivities(): DeploymentControlActivities {
    const control: Partial<DeploymentControlActivities> = {
      loadRevision: (_key, revision) => this.step('loadRevision', async () => this.revision(revision)),
      markRevisionProgress: () => this.step('markRevisionProgress', async () => undefined),
      markRevisionDeployed: (_key, revision, serving, _message, scale = null) =>
        this.step(
          'markRevisionDeployed',
          async () => {
            if ('sandboxId' in serving) this.servingSandbox = serving.sandboxId;
            this.reportedScale = scale;
          },
          (activityId) => 'sandboxId' in serving && this.acknowledged.push({ activityId, sandboxId: serving.sandboxId, running: true }),
        ),
      markScale: (_key, scale) =>
        this.step('markScale', async () => {
          this.reportedScale = scale;
        }),
      markRevisionFailed: () => this.step('markRevisionFailed', async () => undefined),
      recordWorkloadState: (_key, at, usage: WorkloadUsage | undefined) =>
        this.step('recordWorkloadState', async () => {
          if (!usage) this.deletedAt = at;
        }),
      recordWorkloadUsage: (period) =>
        this.step('recordWorkloadUsage', async () => {
          const known = this.usage.get(period.from);
          if (known && (known.to !== period.to || known.memoryMb !== period.memoryMb)) this.problems.push(`period from ${period.from} recorded twice, differently`);
          if (this.deletedAt !== undefined && period.to > this.deletedAt) this.problems.push(`usage recorded up to ${period.to}, after the deletion at ${this.deletedAt}`);
          this.usage.set(period.from, period);
        }),
    };
    return control as DeploymentControlActivities;
  }

  /**
   * Dates each answer by the workflow task that took it in: the workflow's clock (Date.now() in
   * workflow code) is that task's start, a few real milliseconds after the activity answered on
   * the test server. `tookIn` maps an activity id to that time, from the workflow's history.
   */
  learnt(tookIn: Map<string, number>): void {
    for (const change of this.acknowledged) change.at = tookIn.get(change.activityId);
  }

  /** Whether the serving revision's process runs on the node: the scale the gateways should see. */
  nodeScale(): WorkloadScaleState | null {
    if (!this.servingSandbox) return null;
    return this.processes.has(this.servingSandbox) ? 'RUNNING' : 'SCALED_TO_ZERO';
  }

  /**
   * Every way the recorded compute differs from the node's; empty when it agrees. Compute is
   * billable while a process the workflow serves from runs (from the answer that it serves, to
   * the answer that it was removed, and never after the deletion); the periods with memory must
   * cover exactly that time, each second once.
   */
  meteringProblems(): string[] {
    const problems = [...this.problems];
    if (this.deletedAt !== undefined && this.processes.size > 0) problems.push(`${[...this.processes.keys()].join(', ')} still running after the deletion`);
    const periods = [...this.usage.values()].sort((a, b) => a.from - b.from);
    periods.forEach((period, i) => {
      if (i > 0 && period.from < periods[i - 1].to) problems.push(`usage overlaps at ${period.from}`);
    });
    const metered = merge(periods.filter((p) => p.memoryMb > 0).map((p) => [p.from, p.to] as [number, number]));
    const billable = merge(this.billable());
    if (JSON.stringify(metered) !== JSON.stringify(billable)) problems.push(`compute metered over ${JSON.stringify(metered)}, processes ran over ${JSON.stringify(billable)}`);
    return problems;
  }

  /** The intervals over which a served process ran, as the workflow learnt it, clipped at the deletion. */
  private billable(): [number, number][] {
    const end = this.deletedAt ?? Infinity;
    const open = new Map<string, number>();
    const intervals: [number, number][] = [];
    for (const change of this.acknowledged) {
      if (change.at === undefined) {
        this.problems.push(`the answer of activity ${change.activityId} is not in the workflow's history`);
        continue;
      }
      if (change.running && !open.has(change.sandboxId)) open.set(change.sandboxId, change.at!);
      if (!change.running && open.has(change.sandboxId)) {
        intervals.push([open.get(change.sandboxId)!, change.at!]);
        open.delete(change.sandboxId);
      }
    }
    for (const from of open.values()) intervals.push([from, Infinity]);
    return intervals.map(([from, to]) => [from, Math.min(to, end)] as [number, number]).filter(([from, to]) => to > from);
  }
}

/** Sorted, touching intervals joined: the time covered, whatever the pieces. */
function merge(intervals: [number, number][]): [number, number][] {
  const sorted = [...intervals].sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const [from, to] of sorted) {
    const last = out.at(-1);
    if (last && from <= last[1]) last[1] = Math.max(last[1], to);
    else out.push([from, to]);
  }
  return out;
}
