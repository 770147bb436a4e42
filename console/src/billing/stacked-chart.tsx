import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatCost, roundNano } from './metrics';

export interface ChartSeries {
  label: string;
  /** Cost per bucket, USD. */
  costs: number[];
}

/** Distinct hues spread around the wheel, so neighbours in the stack stay apart. */
const colour = (i: number) => `hsl(${(i * 137.5) % 360} 62% 48%)`;

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

function chartOptions(series: ChartSeries[], width: number, onDrawn: () => void): uPlot.Options {
  return {
    width,
    height: 320,
    legend: { show: series.length <= 20 },
    axes: [{}, { values: (_u, ticks) => ticks.map((t) => formatCost(t)), size: 90 }],
    series: [
      { label: 'Bucket start' },
      ...series
        .map((s, i) => ({
          label: s.label,
          stroke: colour(i),
          fill: colour(i),
          width: 1,
          points: { show: false },
          value: (_u: uPlot, _v: number | null, _s: number, idx: number | null) => (idx === null ? '' : formatCost(s.costs[idx])),
        }))
        .reverse(),
    ],
    hooks: { draw: [onDrawn] },
  };
}

/** The billing chart; `data-drawn` is set once uPlot has drawn it (the benchmark waits for it). */
export function StackedChart({ timestamps, series, title }: { timestamps: string[]; series: ChartSeries[]; title: string }) {
  const holder = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = holder.current;
    if (!element) return;
    element.removeAttribute('data-drawn');
    const x = timestamps.map((t) => Date.parse(t) / 1000);
    const data = [x, ...stack(series).reverse()] as uPlot.AlignedData;
    const plot = new uPlot(chartOptions(series, Math.max(320, element.clientWidth), () => element.setAttribute('data-drawn', 'true')), data, element);
    return () => plot.destroy();
  }, [timestamps, series]);
  return <div ref={holder} class="chart" role="img" aria-label={title} />;
}
