/**
 * How far a pull of a registry image is: bytes of layers received (from the start, those the
 * node already stored), layers unpacked while they came, and, once the manifest was read before
 * the copy, the totals and the percentage they give.
 */
export interface PullProgress {
  bytesDone: number;
  layersDone: number;
  bytesTotal?: number;
  layersTotal?: number;
  /** Whole percent of bytesTotal: at most 99 while the pull runs (the unpack and the record come after the bytes), 100 once it is over. */
  percent?: number;
  /** When this pull began (ISO time): a pull begun again, its worker killed, is another pull to those watching. */
  startedAt?: string;
}

/** The progress with its percentage, when its total is known. */
export function withPercent(progress: PullProgress): PullProgress {
  if (!progress.bytesTotal) return progress;
  return { ...progress, percent: Math.min(99, Math.floor((100 * progress.bytesDone) / progress.bytesTotal)) };
}

/** The last progress of a pull that is over: every byte there, 100 %. */
export function completedProgress(progress: PullProgress): PullProgress {
  return progress.bytesTotal ? { ...progress, bytesDone: Math.max(progress.bytesDone, progress.bytesTotal), percent: 100 } : progress;
}

const megabytes = (bytes: number) => (bytes / 1e6).toFixed(1);

/** The pull as a resource's status says it: `pulling image 'x': 4.2 of 6.0 MB received (70 %), 0 of 1 layers unpacked`. */
export function pullMessage(reference: string, progress: PullProgress): string {
  if (progress.bytesTotal === undefined || progress.layersTotal === undefined || progress.percent === undefined) {
    const layers = `${progress.layersDone} layer${progress.layersDone === 1 ? '' : 's'} unpacked`;
    return `pulling image '${reference}': ${megabytes(progress.bytesDone)} MB received, ${layers}`;
  }
  const layers = `${progress.layersDone} of ${progress.layersTotal} layer${progress.layersTotal === 1 ? '' : 's'} unpacked`;
  return `pulling image '${reference}': ${megabytes(progress.bytesDone)} of ${megabytes(progress.bytesTotal)} MB received (${progress.percent} %), ${layers}`;
}

/** The event of a pull reaching a tenth of its bytes: `pulling '<reference>': 30 %`. */
export const milestoneMessage = (reference: string, percent: number) => `pulling '${reference}': ${percent} %`;

/**
 * The tenths a pull passes as its percentage grows (10, 20... 90), each told once, in order, for
 * an event each: a pull seen at 5 % then 27 % passed 10 and 20. A watcher starts where it first
 * saw the pull (`start`: one joined half-way does not tell what came before); a pull begun again
 * (another `startedAt`, or a lower percentage) tells its tenths over from 0.
 */
export class PercentMilestones {
  private last: number | undefined;
  private pull: string | undefined;

  constructor(start?: number, pull?: string) {
    this.last = start;
    this.pull = pull;
  }

  passed(percent: number | undefined, pull?: string): number[] {
    if (percent === undefined) return [];
    let from = this.last;
    const again = pull !== undefined && this.pull !== undefined && pull !== this.pull;
    if (again || (from !== undefined && percent < from)) from = 0;
    this.pull = pull ?? this.pull;
    this.last = percent;
    if (from === undefined || percent <= from) return [];
    const tenths: number[] = [];
    for (let tenth = Math.floor(from / 10) + 1; tenth * 10 <= Math.min(percent, 90); tenth++) tenths.push(tenth * 10);
    return tenths;
  }
}

/** A pull's progress as the API shows it: the totals and the percentage null until the manifest was read (and for pulls recorded before). */
export function pullProgressView(progress: PullProgress) {
  return {
    bytesDone: progress.bytesDone,
    layersDone: progress.layersDone,
    bytesTotal: progress.bytesTotal ?? null,
    layersTotal: progress.layersTotal ?? null,
    percent: progress.percent ?? null,
  };
}
