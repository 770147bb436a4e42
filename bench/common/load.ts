import { summarize, type LatencySummary } from './stats';

export interface LoadOptions {
  /** Timed operations of each kind. */
  count: number;
  /** Operations in flight at once. */
  concurrency: number;
  /** Untimed operations of each kind first (connections opened, JIT warm, caches filled). */
  warmup: number;
  /**
   * The timed operations of each kind are split into this many slices, run in turns with the
   * other kinds' slices, so that a figure and its floor see the same background load even on a
   * busy machine (measured one after the other, a load spike favours one of them).
   */
  rounds: number;
}

export interface TimedOperation {
  key: string;
  op: (index: number) => Promise<void>;
}

/** Runs op(from) .. op(to - 1) with `concurrency` in flight; records each duration at samples[index]. */
async function runSlice(op: TimedOperation['op'], from: number, to: number, concurrency: number, samples?: Float64Array): Promise<void> {
  let next = from;
  const worker = async () => {
    for (;;) {
      const index = next++;
      if (index >= to) return;
      const began = performance.now();
      await op(index);
      if (samples) samples[index] = performance.now() - began;
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, to - from) }, worker));
}

/**
 * Times a fixed number of runs of each operation at a fixed concurrency. Bounded by count, not by
 * duration, so that every figure and its floor do the same amount of work; the first failing
 * operation fails the whole measurement.
 */
export async function measureInterleaved(operations: TimedOperation[], options: LoadOptions): Promise<Map<string, LatencySummary>> {
  for (const { op } of operations) await runSlice(op, 0, options.warmup, options.concurrency);
  const samples = operations.map(() => new Float64Array(options.count));
  const wallMs = operations.map(() => 0);
  const rounds = Math.max(1, Math.min(options.rounds, options.count));
  for (let round = 0; round < rounds; round++) {
    const from = Math.floor((options.count * round) / rounds);
    const to = Math.floor((options.count * (round + 1)) / rounds);
    // A different kind goes first in each round, so none always runs right after the same one.
    for (let turn = 0; turn < operations.length; turn++) {
      const i = (turn + round) % operations.length;
      const began = performance.now();
      await runSlice(operations[i].op, from, to, options.concurrency, samples[i]);
      wallMs[i] += performance.now() - began;
    }
  }
  return new Map(operations.map(({ key }, i) => [key, summarize(samples[i], wallMs[i], options.concurrency)]));
}
