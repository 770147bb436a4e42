/** Latency figures of one measured run: a fixed number of operations at a fixed concurrency. */
export interface LatencySummary {
  count: number;
  concurrency: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  meanMs: number;
  /** Operations completed per second of wall time. */
  throughputPerSecond: number;
}

/** Nearest-rank percentile (p in 0..100) of unsorted samples. */
export function percentile(samples: ArrayLike<number>, p: number): number {
  if (samples.length === 0) throw new Error('no samples');
  const sorted = Float64Array.from(samples).sort();
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export function summarize(samples: ArrayLike<number>, wallMs: number, concurrency: number): LatencySummary {
  let total = 0;
  for (let i = 0; i < samples.length; i++) total += samples[i];
  return {
    count: samples.length,
    concurrency,
    p50Ms: percentile(samples, 50),
    p95Ms: percentile(samples, 95),
    p99Ms: percentile(samples, 99),
    meanMs: total / samples.length,
    throughputPerSecond: (samples.length / wallMs) * 1000,
  };
}

/** How many times slower a figure is than its floor (above 1: slower), per statistic. */
export interface Ratios {
  p50: number;
  p95: number;
  p99: number;
  /** Floor throughput over figure throughput, so that above 1 also means slower. */
  throughput: number;
}

export function ratios(figure: LatencySummary, floor: LatencySummary): Ratios {
  return {
    p50: figure.p50Ms / floor.p50Ms,
    p95: figure.p95Ms / floor.p95Ms,
    p99: figure.p99Ms / floor.p99Ms,
    throughput: floor.throughputPerSecond / figure.throughputPerSecond,
  };
}
