import type { BillingDimension, ResourceType } from './dimensions';

/**
 * Reconciliation of bills with state history: for every billed resource and billing dimension the
 * history can price, the quantity billed in a window is compared with the quantity its history
 * gives (memory x seconds in each state, bytes stored x seconds, hours active, memory x task
 * seconds of a job execution). Pure: the caller loads both sides (see cli/billing-sources.ts).
 */

const GB = 1024 ** 3;

/** Whom a row of either side is about, as usage events name it. */
export interface ResourceRef {
  workspace: string;
  resourceType: ResourceType;
  resourceName: string;
  resourceUuid: string;
}

/** One interval of a resource's state history (table resource_state_intervals). */
export interface StateInterval extends ResourceRef {
  state: string;
  memoryMb: number;
  storedBytes: number;
  /** Epoch milliseconds; `endedAt` undefined while the resource is still in that state. */
  startedAt: number;
  endedAt?: number;
}

/** A finished job execution, billed once (job_compute_runtime_gbs at its start) for memory x task seconds. */
export interface FinishedExecution extends ResourceRef {
  /** The execution's start (its usage event's time) and end, epoch milliseconds. */
  startedAt: number;
  completedAt: number;
  memoryMb: number;
  taskSeconds: number;
}

/** Billed usage of a resource in one dimension at one event time (usage events summed per second). */
export interface BilledUsage extends ResourceRef {
  billingDimension: BillingDimension;
  /** Epoch milliseconds, whole seconds as ClickHouse keeps them. */
  at: number;
  quantity: number;
}

export interface ReconcileOptions {
  /** The window [since, until), epoch milliseconds. */
  since: number;
  until: number;
  /**
   * Usage that ended later than this before `until` may not be billed yet (metered at the end,
   * then moved to ClickHouse within seconds): such a resource is compared like a running one.
   */
  settleMs: number;
  /** The longest a running resource goes between two usage events (the meters' interval, 60 s). */
  meterIntervalMs: number;
  /** Agreement: within this fraction (0.01) or `toleranceSeconds` of the resource's usage, whichever is larger. */
  relativeTolerance: number;
  toleranceSeconds: number;
}

export const DEFAULT_RECONCILE_OPTIONS: Omit<ReconcileOptions, 'since' | 'until'> = {
  settleMs: 15_000,
  meterIntervalMs: 60_000,
  relativeTolerance: 0.01,
  toleranceSeconds: 1,
};

/** One billed quantity compared: a resource's usage in one dimension over [from, to). */
export interface Comparison extends ResourceRef {
  billingDimension: BillingDimension;
  /** The part of the window compared, epoch milliseconds. */
  from: number;
  to: number;
  billed: number;
  /** What the state history gives. */
  expected: number;
}

export interface Disagreement extends Comparison {
  reason: string;
}

export interface ReconcileReport {
  since: number;
  until: number;
  /** Every (resource, dimension) compared, the disagreements included. */
  comparisons: Comparison[];
  disagreements: Disagreement[];
}

/**
 * What one second of an interval costs in each dimension the history prices. Sandbox image and
 * snapshot storage are measured on the node (bytes written, memory frozen) and are not in the
 * history; nor are async requests: those dimensions are not reconciled.
 */
export function intervalRates(interval: Pick<StateInterval, 'resourceType' | 'state' | 'memoryMb' | 'storedBytes'>): Partial<Record<BillingDimension, number>> {
  const memoryGb = interval.memoryMb / 1024;
  const storedGb = interval.storedBytes / GB;
  const running = interval.state === 'RUNNING';
  switch (interval.resourceType) {
    case 'sandbox':
      return { sandbox_compute_runtime_gbs: running ? memoryGb : 0 };
    case 'agent':
      return { agent_compute_runtime_gbs: running ? memoryGb : 0, agent_image_storage_gbs: storedGb };
    case 'mcp_server':
      return { mcp_server_compute_runtime_gbs: running ? memoryGb : 0, mcp_server_image_storage_gbs: storedGb };
    case 'job':
      return { job_image_storage_gbs: storedGb };
    case 'volume':
      return { volume_storage_gbs: storedGb };
    case 'custom_domain':
      return { custom_domain_active_time_hours: interval.state === 'ACTIVE' ? 1 / 3600 : 0 };
  }
}

/** The dimensions reconciled, each against the history of its resource type. */
export const RECONCILED_DIMENSIONS: BillingDimension[] = [
  'sandbox_compute_runtime_gbs',
  'agent_compute_runtime_gbs',
  'agent_image_storage_gbs',
  'mcp_server_compute_runtime_gbs',
  'mcp_server_image_storage_gbs',
  'job_image_storage_gbs',
  'job_compute_runtime_gbs',
  'volume_storage_gbs',
  'custom_domain_active_time_hours',
];

/** Compares bills with history over the window; bills in dimensions not reconciled only mark metering periods. */
export function reconcile(
  history: { intervals: StateInterval[]; executions: FinishedExecution[] },
  billed: BilledUsage[],
  options: ReconcileOptions,
): ReconcileReport {
  const since = Math.floor(options.since / 1000) * 1000;
  const window = { ...options, since };
  const bills = groupBy(billed.filter((b) => b.at >= since && b.at < options.until), (b) => b.resourceUuid);
  const intervals = groupBy(history.intervals, (i) => i.resourceUuid);
  const executions = new Map(history.executions.map((e) => [e.resourceUuid, e]));
  const report: ReconcileReport = { since, until: options.until, comparisons: [], disagreements: [] };

  for (const uuid of new Set([...bills.keys(), ...intervals.keys(), ...executions.keys()])) {
    const resourceBills = bills.get(uuid) ?? [];
    const comparisons = intervals.has(uuid)
      ? compareWithIntervals(intervals.get(uuid)!, resourceBills, window)
      : executions.has(uuid)
        ? compareExecution(executions.get(uuid)!, resourceBills, window)
        : unexplained(resourceBills);
    for (const { rate, reason: known, ...comparison } of comparisons) {
      report.comparisons.push(comparison);
      const reason = known ?? disagreementReason(comparison, rate, options);
      if (reason) report.disagreements.push({ ...comparison, reason });
    }
  }
  report.disagreements.sort((a, b) => a.workspace.localeCompare(b.workspace) || a.resourceName.localeCompare(b.resourceName) || a.billingDimension.localeCompare(b.billingDimension) || a.resourceUuid.localeCompare(b.resourceUuid));
  return report;
}

/** A comparison as it is made, with what judging it needs. */
interface Judged extends Comparison {
  /** The largest rate of the dimension seen (units per second): the second-resolution slack. */
  rate: number;
  /** Set when the pair disagrees whatever the quantities (e.g. billing stopped). */
  reason?: string;
}

/**
 * A resource with a state history. The compared span starts at the window's start when the
 * resource began inside it, else at its first usage event in the window (a metering period starts
 * there); it ends at the window's end when the resource ended long enough ago for its last period to
 * be billed, else at its last usage event (whose period is still open or on its way). Usage events
 * of every dimension mark periods, the dimensions not reconciled included.
 */
function compareWithIntervals(intervals: StateInterval[], bills: BilledUsage[], options: ReconcileOptions): Judged[] {
  const { since, until } = options;
  const overlapping = intervals.filter((i) => i.startedAt < until && (i.endedAt ?? Infinity) > since).sort((a, b) => a.startedAt - b.startedAt);
  if (overlapping.length === 0) return unexplained(bills);
  const latest = overlapping[overlapping.length - 1];
  const eventTimes = bills.map((b) => b.at);
  const began = overlapping[0].startedAt;
  const ended = latest.endedAt ?? Infinity;
  const settled = ended <= until - options.settleMs;
  const lastEvent = eventTimes.length > 0 ? Math.max(...eventTimes) : undefined;
  // Alive before the window and not billed in it: its usage here (if any) belongs to an earlier period.
  const from = began >= since || lastEvent === undefined ? since : Math.min(...eventTimes);
  const to = began < since && lastEvent === undefined ? since : settled ? until : (lastEvent ?? since);
  // Billed while it is billable: a period lasts at most one meter interval, the next is recorded
  // when it ends (and reaches ClickHouse within the settling time).
  const lastBilled = Math.max(lastEvent ?? since, began);
  const stale = Math.min(ended, until) - lastBilled > 2 * options.meterIntervalMs + options.settleMs;
  const reconciled = new Set(RECONCILED_DIMENSIONS);
  const dimensions = new Set<BillingDimension>([...bills.map((b) => b.billingDimension), ...overlapping.flatMap((i) => Object.keys(intervalRates(i)) as BillingDimension[])]);

  return [...dimensions].filter((dimension) => reconciled.has(dimension)).map((billingDimension) => {
    let expected = 0;
    let rate = 0;
    for (const interval of overlapping) {
      const perSecond = intervalRates(interval)[billingDimension] ?? 0;
      rate = Math.max(rate, perSecond);
      expected += perSecond * overlapSeconds(interval.startedAt, Math.min(interval.endedAt ?? Infinity, until), from, to);
    }
    const billed = sum(bills.filter((b) => b.billingDimension === billingDimension && b.at >= from && b.at < to));
    const comparison: Judged = { ...refOf(latest), billingDimension, from, to, billed, expected, rate };
    if (stale && (intervalRates(latest)[billingDimension] ?? 0) > 0) comparison.reason = `not billed since ${new Date(lastBilled).toISOString()}`;
    return comparison;
  });
}

/** A finished job execution: one event at its start for memory x task seconds. */
function compareExecution(execution: FinishedExecution, bills: BilledUsage[], options: ReconcileOptions): Judged[] {
  if (execution.startedAt < options.since || execution.startedAt >= options.until) return unexplained(bills);
  if (execution.completedAt > options.until - options.settleMs) return [];
  const memoryGb = execution.memoryMb / 1024;
  const billed = sum(bills.filter((b) => b.billingDimension === 'job_compute_runtime_gbs'));
  const { startedAt: from, completedAt: to } = execution;
  return [{ ...refOf(execution), billingDimension: 'job_compute_runtime_gbs', from, to, billed, expected: memoryGb * execution.taskSeconds, rate: memoryGb }];
}

/** Bills of a resource the history does not know in the window: each reconciled dimension disagrees. */
function unexplained(bills: BilledUsage[]): Judged[] {
  const reconciled = new Set(RECONCILED_DIMENSIONS);
  const groups = groupBy(bills.filter((b) => reconciled.has(b.billingDimension)), (b) => b.billingDimension);
  return [...groups.values()].map((group) => ({
    ...refOf(group[0]),
    billingDimension: group[0].billingDimension,
    from: Math.min(...group.map((b) => b.at)),
    to: Math.max(...group.map((b) => b.at)) + 1000,
    billed: sum(group),
    expected: 0,
    rate: 0,
    reason: 'billed, but no state history for it in the window',
  }));
}

/** Undefined when billed and expected agree within the tolerance. */
function disagreementReason(c: Comparison, rate: number, options: ReconcileOptions): string | undefined {
  const allowed = Math.max(options.relativeTolerance * Math.max(c.billed, c.expected), rate * options.toleranceSeconds, 1e-6);
  if (Math.abs(c.billed - c.expected) <= allowed) return undefined;
  return c.billed > c.expected ? 'billed more than the state history says' : 'billed less than the state history says';
}

function overlapSeconds(start: number, end: number, from: number, to: number): number {
  return Math.max(0, Math.min(end, to) - Math.max(start, from)) / 1000;
}

function sum(bills: BilledUsage[]): number {
  return bills.reduce((total, b) => total + b.quantity, 0);
}

function refOf(row: ResourceRef): ResourceRef {
  return { workspace: row.workspace, resourceType: row.resourceType, resourceName: row.resourceName, resourceUuid: row.resourceUuid };
}

function groupBy<T>(rows: T[], key: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const group = groups.get(key(row));
    if (group) group.push(row);
    else groups.set(key(row), [row]);
  }
  return groups;
}
