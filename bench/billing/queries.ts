import { sqlLiteral } from '../../domain/sql-literal';
import type { UsageTables } from '../../domain/billing/storage';

/** One representative metrics query: its API parameters and the same aggregation on the raw table. */
export interface BenchQuery {
  name: string;
  params: Record<string, string>;
  /** Walk every page (each page is one timed request). */
  paged: boolean;
  rawSql: string;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

export function benchQueries(tables: UsageTables, accountId: string, start: number, end: number, workspace: string): BenchQuery[] {
  /** The raw equivalent: FINAL, since only deduplicated events give the same (right) answer. */
  const raw = (from: number, to: number, keys: string[], bucket: string, extra = '', measures = 'toString(sum(cost))') =>
    `SELECT ${[...keys, `${bucket} AS b`].join(', ')}, ${measures} FROM ${tables.raw} FINAL ` +
    `WHERE account_id = ${sqlLiteral(accountId)} AND event_time >= ${sqlLiteral(new Date(from))} AND event_time < ${sqlLiteral(new Date(to))}${extra} ` +
    `GROUP BY ${[...keys, 'b'].join(', ')}`;
  const week = end - 7 * DAY;
  const month = end - 30 * DAY;
  const day = end - DAY;
  const raggedStart = start + 5 * HOUR + 30 * 60_000;
  const raggedEnd = end - 2 * HOUR - 15 * 60_000;
  return [
    {
      name: '90 days daily by workspace,resource_type,billing_dimension',
      params: { startTime: iso(start), endTime: iso(end), resolution: 'daily', groupBy: 'workspace,resource_type,billing_dimension' },
      paged: false,
      rawSql: raw(start, end, ['workspace', 'resource_type', 'billing_dimension'], 'toStartOfDay(event_time)', '', 'toString(sum(cost)), toString(sum(quantity))'),
    },
    {
      name: '7 days hourly by resource_name, every page',
      params: { startTime: iso(week), endTime: iso(end), resolution: 'hourly', groupBy: 'resource_name' },
      paged: true,
      rawSql: raw(week, end, ['resource_name'], 'toStartOfHour(event_time)'),
    },
    {
      name: '1 year weekly ungrouped',
      params: { startTime: iso(end - 365 * DAY), endTime: iso(end), resolution: 'weekly' },
      paged: false,
      rawSql: raw(end - 365 * DAY, end, [], 'toMonday(event_time)'),
    },
    {
      name: '30 days daily by billing_dimension (usage)',
      params: { startTime: iso(month), endTime: iso(end), groupBy: 'billing_dimension' },
      paged: false,
      rawSql: raw(month, end, ['billing_dimension'], 'toStartOfDay(event_time)', '', 'toString(sum(cost)), toString(sum(quantity))'),
    },
    {
      name: '24 hours hourly by resource_uuid in one workspace, first page',
      params: { startTime: iso(day), endTime: iso(end), groupBy: 'resource_uuid', workspace },
      paged: false,
      rawSql: raw(day, end, ['resource_uuid'], 'toStartOfHour(event_time)', ` AND workspace = ${sqlLiteral(workspace)}`),
    },
    {
      name: '90 days with ragged edges, default (weekly) by resource_type',
      params: { startTime: iso(raggedStart), endTime: iso(raggedEnd), groupBy: 'resource_type' },
      paged: false,
      rawSql: raw(raggedStart, raggedEnd, ['resource_type'], 'toMonday(event_time)'),
    },
  ];
}
