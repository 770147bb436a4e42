import { groupValues, type GroupField, type MetricsEntry } from './metrics';

/** A CSV field, quoted when it holds a separator, a quote or a line break (RFC 4180). */
function field(value: string | number | undefined): string {
  const text = value === undefined ? '' : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * One row per group and bucket, the long form a spreadsheet pivots: the bucket's start, the
 * group's fields, its cost in USD and its usage in each unit (empty where it has none).
 */
export function metricsCsv(entries: MetricsEntry[], groupBy: GroupField[]): string {
  const lines = [['bucket_start', ...groupBy, 'cost_usd', 'usage_gbs', 'usage_count', 'usage_hours'].join(',')];
  for (const entry of entries) {
    const group = groupValues(entry, groupBy);
    for (const point of entry.timeseries) {
      lines.push([point.timestamp, ...group, point.cost, point.usage?.gbs, point.usage?.count, point.usage?.hours].map(field).join(','));
    }
  }
  return `${lines.join('\r\n')}\r\n`;
}
