import { GROUP_FIELDS, RESOLUTIONS, type GroupField, type MetricsQuery } from './metrics';

const DAY_MS = 86_400_000;

/** 00:00 UTC of the day `ms` falls in, as the metrics API's window bounds want (RFC 3339, Z). */
export function utcDay(ms: number): string {
  return new Date(Math.floor(ms / DAY_MS) * DAY_MS).toISOString().replace('.000Z', 'Z');
}

/**
 * The billing page's query from its address (so that a link, or the benchmark, opens a given
 * view once signed in): `start`, `end` (RFC 3339 or a date), `resolution`, `groupBy` (comma
 * separated), `limit`. Anything missing is the last 7 days by resource type and dimension.
 */
export function queryFromAddress(search: string, now = Date.now()): MetricsQuery {
  const params = new URLSearchParams(search);
  const asTime = (value: string | null, fallback: string) => (value ? (value.length === 10 ? `${value}T00:00:00Z` : value) : fallback);
  const resolution = params.get('resolution') as MetricsQuery['resolution'] | null;
  const groupBy = (params.get('groupBy') ?? 'resource_type,billing_dimension').split(',').filter((f): f is GroupField => (GROUP_FIELDS as readonly string[]).includes(f));
  const limit = Number(params.get('limit') ?? 100);
  return {
    startTime: asTime(params.get('start'), utcDay(now - 6 * DAY_MS)),
    endTime: asTime(params.get('end'), utcDay(now + DAY_MS)),
    resolution: resolution && RESOLUTIONS.includes(resolution) ? resolution : 'auto',
    groupBy: groupBy.length ? groupBy.slice(0, 3) : ['resource_type'],
    limit: Number.isInteger(limit) && limit >= 1 && limit <= 100 ? limit : 100,
  };
}

/** The address of a query, kept in the location bar as the controls change. */
export function addressOf(query: MetricsQuery): string {
  const params = new URLSearchParams({ start: query.startTime, end: query.endTime, resolution: query.resolution, groupBy: query.groupBy.join(','), limit: String(query.limit) });
  return `?${params}`;
}
