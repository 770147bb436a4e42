import { sqlLiteral } from '../sql-literal';
import { enrichmentFields, reportsUsage } from './grouping';
import type { GroupDimension, MetricsFilters, MetricsQuery, MetricsWindow } from './metrics-query';
import { planSegments, tableOf, TIME_COLUMN, type Segment, type UsageTables } from './storage';
import type { Resolution } from './time';

/**
 * SQL of the metrics reads. Identifiers come only from the constants below; every value goes
 * through sqlLiteral. The statements run unchanged on ClickHouse 18.16 and on current releases
 * (no query parameters, WITH FILL, toStartOfInterval, toStartOfWeek or DateTime64).
 */

/** Column of each groupBy dimension; the same in the raw and rollup tables. */
const DIMENSION_COLUMN: Record<GroupDimension, string> = {
  workspace: 'workspace',
  resource_type: 'resource_type',
  resource_name: 'resource_name',
  resource_uuid: 'resource_uuid',
  billing_dimension: 'billing_dimension',
};

const FILTER_COLUMN: Record<keyof MetricsFilters, string> = {
  workspace: 'workspace',
  resourceType: 'resource_type',
  resourceName: 'resource_name',
  resourceUuid: 'resource_uuid',
  billingDimension: 'billing_dimension',
};

/** Bucket start in epoch seconds of the time column `t`, in UTC (the columns are DateTime('UTC')). */
const BUCKET_SECONDS: Record<Resolution, string> = {
  hourly: 'toUInt32(toStartOfHour(t))',
  daily: 'toUInt32(toStartOfDay(t))',
  // Dates convert to day numbers without any time zone, unlike Date -> DateTime.
  weekly: 'toUInt32(toUInt16(toMonday(t))) * 86400',
  monthly: 'toUInt32(toUInt16(toStartOfMonth(t))) * 86400',
};

/** Who asks and what they may see, shared by every read. */
export interface MetricsScope {
  tables: UsageTables;
  accountId: string;
  /** Workspaces a non-admin caller belongs to; undefined for account admins (every workspace). */
  visibleWorkspaces?: readonly string[];
  /** Hours (epoch seconds) whose rollups are not trusted, read from the raw table. */
  pendingHours?: ReadonlySet<number>;
}

/** Filtered rows are read only where a stored event's second lies in the window: [ceil(start), ceil(end)). */
export function windowSeconds(window: MetricsWindow): { from: number; to: number } {
  return { from: Math.ceil(window.start / 1000), to: Math.ceil(window.end / 1000) };
}

/**
 * The groups of a page in key order, with their window totals and, per enrichment column, min
 * and max (equal when the group has one value). One more than the page holds, to tell whether
 * another page follows. Listing needs no buckets, so it reads whole days from daily tables.
 */
export function groupListSql(scope: MetricsScope, query: MetricsQuery, after: readonly string[] | undefined): string {
  const keys = keyColumns(query);
  const enrich = enrichmentFields(query.groupBy).map((rule) => DIMENSION_COLUMN[rule.dimension]);
  const measures = ['toString(sum(cost)) AS cost_sum'];
  if (reportsUsage(query.groupBy)) measures.push('toString(sum(quantity)) AS quantity_sum');
  for (const column of enrich) measures.push(`min(${column}) AS min_${column}`, `max(${column}) AS max_${column}`);
  const source = unionOf(scope, query, [...keys, ...enrich, ...measureColumns(query)], WHOLE_WINDOW, after);
  const keyList = keys.join(', ');
  return `SELECT ${keyList}, ${measures.join(', ')} FROM (${source}) GROUP BY ${keyList} ORDER BY ${keyList} LIMIT ${sqlLiteral(query.limit + 1)}`;
}

/**
 * Cost (and usage) per bucket of the groups with keys in (after, upTo]: exactly those of one page
 * as groupListSql listed them, a key range the primary key uses to skip other groups' rows. Of
 * every row for an ungrouped query.
 */
export function bucketSql(scope: MetricsScope, query: MetricsQuery, after: readonly string[] | undefined, upTo: readonly string[] | undefined): string {
  const keys = keyColumns(query);
  const measures = ['toString(sum(cost)) AS cost_sum'];
  if (reportsUsage(query.groupBy)) measures.push('toString(sum(quantity)) AS quantity_sum');
  const upToCondition = upTo ? `${tupleOf(keys)} <= ${tupleOf(upTo.map(sqlLiteral))}` : undefined;
  const rows = unionOf(scope, query, [...keys, ...measureColumns(query), 't'], query.resolution, after, upToCondition);
  const groupKeys = [...keys, 'bucket'].join(', ');
  return `SELECT ${groupKeys}, ${measures.join(', ')} FROM (SELECT *, ${BUCKET_SECONDS[query.resolution]} AS bucket FROM (${rows})) GROUP BY ${groupKeys}`;
}

function keyColumns(query: MetricsQuery): string[] {
  return query.groupBy.map((dimension) => DIMENSION_COLUMN[dimension]);
}

/** Quantities are read only when usage is reported: they are wide decimals. */
function measureColumns(query: MetricsQuery): string[] {
  return reportsUsage(query.groupBy) ? ['cost', 'quantity'] : ['cost'];
}

/** Cost and quantity of the whole filtered window per billing dimension (a dozen rows at most). */
export function totalsSql(scope: MetricsScope, query: MetricsQuery): string {
  // Totals are per billing dimension whatever the grouping: only the filters decide the tables.
  const source = unionOf(scope, { ...query, groupBy: [] }, ['billing_dimension', 'cost', 'quantity'], WHOLE_WINDOW, undefined);
  return `SELECT billing_dimension, toString(sum(cost)) AS cost_sum, toString(sum(quantity)) AS quantity_sum FROM (${source}) GROUP BY billing_dimension`;
}

/** Distinct resource types with at least one event in the window. */
export function resourceTypesSql(scope: MetricsScope, window: MetricsWindow): string {
  const source = unionOf(scope, { ...window, groupBy: [], filters: {} }, ['resource_type'], WHOLE_WINDOW, undefined);
  return `SELECT DISTINCT resource_type FROM (${source}) ORDER BY resource_type`;
}

interface SourceQuery extends MetricsWindow {
  groupBy: readonly GroupDimension[];
  filters: MetricsFilters;
}

/** Reads that need no buckets (group lists, totals) may take whole days from the daily table. */
const WHOLE_WINDOW = 'window';

function unionOf(
  scope: MetricsScope,
  query: SourceQuery,
  columns: string[],
  buckets: Resolution | typeof WHOLE_WINDOW,
  after: readonly string[] | undefined,
  /** A further condition on every segment's rows. */
  restriction?: string,
): string {
  const { from, to } = windowSeconds(query);
  const planned = planSegments(from, to, buckets !== 'hourly', scope.pendingHours);
  // A window narrower than a second holds no stored event; an empty range still yields valid SQL.
  const segments: Segment[] = planned.length > 0 ? planned : [{ source: 'raw', from, to: from }];
  const conditions = sharedConditions(scope, query, after);
  if (restriction) conditions.push(restriction);
  const dims = needsOnlyDims(query);
  return segments.map((segment) => segmentSql(scope, segment, dims, columns, conditions)).join(' UNION ALL ');
}

const DIMS_COLUMNS: readonly GroupDimension[] = ['workspace', 'resource_type', 'billing_dimension'];

/** Whether the rollups without resource names and uuids hold everything the query reads. */
function needsOnlyDims(query: SourceQuery): boolean {
  const shown = [...query.groupBy, ...enrichmentFields(query.groupBy).map((rule) => rule.dimension)];
  return shown.every((d) => DIMS_COLUMNS.includes(d)) && query.filters.resourceName === undefined && query.filters.resourceUuid === undefined;
}

function segmentSql(scope: MetricsScope, segment: Segment, dims: boolean, columns: string[], conditions: string[]): string {
  const time = TIME_COLUMN[segment.source];
  const table = tableOf(scope.tables, segment.source, dims);
  const selected = columns.map((column) => (column === 't' ? `${time} AS t` : column));
  const period = `${time} >= ${sqlLiteral(new Date(segment.from * 1000))} AND ${time} < ${sqlLiteral(new Date(segment.to * 1000))}`;
  const where = [period, ...conditions];
  // FINAL: raw rows re-sent by a retried flush are read once. Rollup rows are summed by every read.
  return `SELECT ${selected.join(', ')} FROM ${table}${segment.source === 'raw' ? ' FINAL' : ''} WHERE ${where.join(' AND ')}`;
}

function sharedConditions(scope: MetricsScope, query: SourceQuery, after: readonly string[] | undefined): string[] {
  const conditions = [`account_id = ${sqlLiteral(scope.accountId)}`];
  for (const [name, value] of Object.entries(query.filters) as [keyof MetricsFilters, string | undefined][]) {
    if (value !== undefined) conditions.push(`${FILTER_COLUMN[name]} = ${sqlLiteral(value)}`);
  }
  if (scope.visibleWorkspaces) {
    conditions.push(
      scope.visibleWorkspaces.length === 0 ? '0 = 1' : `workspace IN (${scope.visibleWorkspaces.map(sqlLiteral).join(', ')})`,
    );
  }
  const keys = query.groupBy.map((dimension) => DIMENSION_COLUMN[dimension]);
  if (after) conditions.push(`${tupleOf(keys)} > ${tupleOf(after.map(sqlLiteral))}`);
  return conditions;
}

function tupleOf(parts: readonly string[]): string {
  return parts.length === 1 ? parts[0] : `(${parts.join(', ')})`;
}
