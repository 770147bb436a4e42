import type { VolumeControlActivities } from '../../activities/volume-control';
import type { VolumeNodeActivities } from '../../activities/volume-node';

type Period = { from: number; to: number; sizeMb: number };

/**
 * An in-memory node and control plane for one volume, with the activities' interfaces. It keeps
 * the node's true history (when its storage was created, grown and removed, and to what size) and
 * what the workflow recorded (usage periods, events), so that a test can check the one against
 * the other. Time is the test server's clock, the one the workflow sees.
 */
export class VolumeNodeModel {
  /** The storage's size from each moment on; undefined once removed. */
  readonly history: { at: number; sizeMb: number | undefined }[] = [];
  /** Usage periods as recorded, keyed by their start (the period's id follows its start). */
  readonly usage = new Map<number, Period>();
  readonly events: string[] = [];
  readonly problems: string[] = [];
  deployedAt: number | undefined;
  deletedAt: number | undefined;
  recordDeleted = false;

  constructor(
    private readonly now: () => Promise<number>,
    /** Called inside growVolumeStorage, after its effect and before its answer: the schedule's moment. */
    private readonly duringGrow: (sizeMb: number) => Promise<void> = async () => undefined,
  ) {}

  get storageMb(): number | undefined {
    return this.history.at(-1)?.sizeMb;
  }

  nodeActivities(): VolumeNodeActivities {
    return {
      createVolumeStorage: async (_key, sizeMb) => {
        if (this.storageMb === undefined) this.history.push({ at: await this.now(), sizeMb });
        return { kind: 'loop' };
      },
      growVolumeStorage: async (_key, sizeMb) => {
        if ((this.storageMb ?? 0) < sizeMb) this.history.push({ at: await this.now(), sizeMb });
        await this.duringGrow(sizeMb);
        return {};
      },
      deleteVolumeStorage: async () => {
        if (this.storageMb !== undefined) this.history.push({ at: await this.now(), sizeMb: undefined });
      },
    };
  }

  controlActivities(): VolumeControlActivities {
    return {
      markVolumeDeployed: async (_key, event, storage) => {
        this.events.push(event.message);
        const since = storage?.since ?? (await this.now());
        this.deployedAt ??= since;
        return since;
      },
      markVolumeFailed: async (_key, message) => {
        this.events.push(message);
      },
      markVolumeDeleting: async () => (this.deletedAt = await this.now()),
      deleteVolumeRecord: async () => {
        this.recordDeleted = true;
      },
      recordVolumeUsage: async ({ from, to, sizeMb }) => {
        const known = this.usage.get(from);
        if (known && (known.to !== to || known.sizeMb !== sizeMb)) this.problems.push(`period from ${from} recorded twice, differently`);
        this.usage.set(from, { from, to, sizeMb });
      },
    };
  }

  /** The storage's size at a moment, by the node's history. */
  private sizeAt(at: number): number | undefined {
    return this.history.filter((change) => change.at <= at).at(-1)?.sizeMb;
  }

  /**
   * Every way the recorded usage differs from the node; empty when it agrees. Usage covers the
   * volume from its deployment to its deletion without gap or overlap, each period at the size
   * its storage had (read at the period's last millisecond: the workflow switches size at the
   * moment it asks the node to grow, the node grows a moment later).
   */
  meteringProblems(): string[] {
    const problems = [...this.problems];
    const periods = [...this.usage.values()].sort((a, b) => a.from - b.from);
    if (periods.length === 0) return [...problems, 'no usage recorded'];
    if (periods[0].from !== this.deployedAt) problems.push(`usage starts at ${periods[0].from}, the volume was deployed at ${this.deployedAt}`);
    if (this.deletedAt !== undefined && periods.at(-1)!.to !== this.deletedAt) problems.push(`usage ends at ${periods.at(-1)!.to}, the volume was deleted at ${this.deletedAt}`);
    periods.forEach((period, i) => {
      if (i > 0 && period.from !== periods[i - 1].to) problems.push(`usage has a ${period.from > periods[i - 1].to ? 'gap' : 'overlap'} at ${periods[i - 1].to}`);
      const size = this.sizeAt(period.to - 1);
      if (size !== period.sizeMb) problems.push(`[${period.from}, ${period.to}) metered at ${period.sizeMb} MB, the storage had ${size} MB`);
    });
    return problems;
  }
}
