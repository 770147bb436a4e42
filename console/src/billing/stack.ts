import { roundNano } from './metrics';

export interface ChartSeries {
  label: string;
  /** Cost per bucket, USD. */
  costs: number[];
}

/**
 * Stacked areas: series i is drawn at the sum of series 0..i, filled to zero, top of the stack
 * first so each lower band covers the one above it down to its own line. Legends show each
 * series' own cost, not the running sum.
 */
export function stack(series: ChartSeries[]): number[][] {
  const sums: number[][] = [];
  series.forEach((s, i) => sums.push(s.costs.map((cost, b) => roundNano(cost + (i ? sums[i - 1][b] : 0)))));
  return sums;
}

/** Distinct hues spread around the wheel, so neighbours in the stack stay apart; the table's swatches use the same. */
export const colour = (i: number) => `hsl(${(i * 137.5) % 360} 62% 48%)`;
