import { formatTable } from '../../domain/text-table';
import { choice, parseArgs } from './args';
import { call } from './client';
import type { CommandContext } from './context';
import { loadCredentials } from './credentials';
import { UsageError } from './errors';

const GROUPS = ['workspace', 'resource_type', 'resource_name', 'resource_uuid', 'billing_dimension'];
const UNIT_SECONDS: Record<string, number> = { m: 60, h: 3600, d: 86_400, w: 604_800 };

interface MetricsEntry {
  workspace?: string;
  resourceType?: string;
  resourceName?: string;
  resourceUuid?: string;
  billingDimension?: string;
  summary: { cost: number; usage?: Record<string, number> };
}

interface MetricsPage {
  startTime: string;
  endTime: string;
  summary: { totalCost: number };
  data: MetricsEntry[];
  meta: { hasMore: boolean; nextCursor: string };
}

/** `--since 7d` as the window's start: a number and one of m, h, d, w. */
export function sinceToStart(since: string, now: Date): Date {
  const match = /^(\d+)([mhdw])$/.exec(since);
  if (!match || Number(match[1]) === 0) throw new UsageError(`--since must be a duration such as 30m, 12h, 7d or 2w (got '${since}')`);
  return new Date(now.getTime() - Number(match[1]) * UNIT_SECONDS[match[2]] * 1000);
}

function groupBy(value: string): string[] {
  const groups = value.split(',').map((g) => g.trim().replace(/-/g, '_'));
  const wrong = groups.find((g) => !GROUPS.includes(g));
  if (wrong !== undefined || groups.length > 3) throw new UsageError(`--group-by takes up to 3 of ${GROUPS.join(', ')}, comma-separated (got '${value}')`);
  return groups;
}

const KEY_FIELDS = ['workspace', 'resourceType', 'resourceName', 'billingDimension'] as const;

function rows(entries: MetricsEntry[]): string[][] {
  return entries.map((entry) => [
    ...KEY_FIELDS.map((field) => entry[field] ?? ''),
    Object.entries(entry.summary.usage ?? {})
      .map(([unit, quantity]) => `${quantity} ${unit}`)
      .join(' '),
    entry.summary.cost.toFixed(9),
  ]);
}

const csvCell = (cell: string) => (/[",\n]/.test(cell) ? `"${cell.replace(/"/g, '""')}"` : cell);

/** Every page of the query (the cursor is passed back with otherwise identical parameters). */
async function fetchAll(ctx: CommandContext, params: URLSearchParams): Promise<{ first: MetricsPage; entries: MetricsEntry[] }> {
  const credentials = loadCredentials(ctx.env);
  const workspace = await call<{ accountId: string }>(credentials, 'GET', `/v0/workspaces/${encodeURIComponent(credentials.workspace)}`);
  const base = `/v0/accounts/${encodeURIComponent(workspace.accountId)}/metrics`;
  const first = await call<MetricsPage>(credentials, 'GET', `${base}?${params}`);
  const entries = [...first.data];
  for (let page = first; page.meta.hasMore; ) {
    page = await call<MetricsPage>(credentials, 'GET', `${base}?${params}&cursor=${encodeURIComponent(page.meta.nextCursor)}`);
    entries.push(...page.data);
  }
  return { first, entries };
}

/** `hangar billing [--since 7d] [--group-by a,b] [--output table|json|csv]`: the account's costs over the window. */
export async function billing(ctx: CommandContext): Promise<number> {
  const args = parseArgs(ctx.argv, ['since', 'group-by', 'output']);
  if (args.positional.length > 0) throw new UsageError('usage: hangar billing [--since 7d] [--group-by resource_name,billing_dimension] [--output table|json|csv]');
  const output = choice(args, 'output', ['table', 'json', 'csv'], 'table');
  const now = new Date();
  const start = sinceToStart(args.options.get('since') ?? '7d', now);
  const groups = groupBy(args.options.get('group-by') ?? 'resource_type,resource_name,billing_dimension');
  const params = new URLSearchParams({ startTime: start.toISOString(), endTime: now.toISOString(), groupBy: groups.join(',') });
  const { first, entries } = await fetchAll(ctx, params);
  if (output === 'json') {
    ctx.out(`${JSON.stringify({ startTime: first.startTime, endTime: first.endTime, totalCost: first.summary.totalCost, data: entries }, null, 2)}\n`);
    return 0;
  }
  const header = ['workspace', 'resource_type', 'resource_name', 'billing_dimension', 'usage', 'cost_usd'];
  if (output === 'csv') {
    ctx.out(`${[header, ...rows(entries)].map((line) => line.map(csvCell).join(',')).join('\n')}\n`);
    return 0;
  }
  ctx.out(`${formatTable(header.map((h) => h.toUpperCase()), rows(entries))}\ntotal ${first.summary.totalCost.toFixed(9)} USD from ${first.startTime} to ${first.endTime}\n`);
  return 0;
}
