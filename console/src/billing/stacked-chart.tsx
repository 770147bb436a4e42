import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatCost } from './metrics';
import { colour, stack, type ChartSeries } from './stack';

function chartOptions(series: ChartSeries[], width: number, onDrawn: () => void): uPlot.Options {
  return {
    width,
    height: 320,
    // Buckets start at 00:00 UTC (hour starts, Mondays, the 1st): shown in UTC, not the browser's zone.
    tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), 'Etc/UTC'),
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
    const drawn = () => {
      if (element.hasAttribute('data-drawn')) return;
      element.setAttribute('data-drawn', 'true');
      performance.mark('hangar:chart-drawn');
    };
    const plot = new uPlot(chartOptions(series, Math.max(320, element.clientWidth), drawn), data, element);
    return () => plot.destroy();
  }, [timestamps, series]);
  return <div ref={holder} class="chart" role="img" aria-label={title} />;
}
