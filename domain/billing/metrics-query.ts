import { isBillingDimension, isResourceType, type BillingDimension, type ResourceType } from './dimensions';
import { InvalidInput } from './errors';
import {
  defaultResolution,
  formatRfc3339,
  MAX_TIME_MS,
  MIN_TIME_MS,
  parseRfc3339,
  RESOLUTIONS,
  WINDOW_CAPS,
  windowWithinCap,
  type Resolution,
} from './time';

/** Valid groupBy dimensions, in the canonical order applied to every grouping. */
export const GROUP_BY_DIMENSIONS = ['workspace', 'resource_type', 'resource_name', 'resource_uuid', 'billing_dimension'] as const;
export type GroupDimension = (typeof GROUP_BY_DIMENSIONS)[number];

export const MAX_GROUP_BY = 3;
export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 100;
const MAX_FILTER_LENGTH = 256;

export interface MetricsFilters {
  workspace?: string;
  resourceType?: ResourceType;
  resourceName?: string;
  resourceUuid?: string;
  billingDimension?: BillingDimension;
}

export interface MetricsWindow {
  /** Window as given: start inclusive, end exclusive, epoch ms. */
  start: number;
  end: number;
}

export interface MetricsQuery extends MetricsWindow {
  resolution: Resolution;
  /** Canonical order, no duplicates; empty means one aggregated entry. */
  groupBy: GroupDimension[];
  filters: MetricsFilters;
  limit: number;
  cursor?: string;
}

type RawQuery = Record<string, unknown>;

const METRICS_PARAMETERS = new Set([
  'startTime',
  'endTime',
  'resolution',
  'groupBy',
  'workspace',
  'resourceType',
  'resourceName',
  'resourceUuid',
  'billingDimension',
  'limit',
  'cursor',
]);
const WINDOW_PARAMETERS = new Set(['startTime', 'endTime']);

/** Validates the query string of endpoint 14; throws InvalidInput naming the parameter. */
export function parseMetricsQuery(raw: RawQuery): MetricsQuery {
  rejectUnknown(raw, METRICS_PARAMETERS);
  const window = readWindow(raw);
  const requested = optionalText(raw, 'resolution');
  let resolution: Resolution;
  if (requested === undefined) {
    resolution = defaultResolution(window.start, window.end);
  } else {
    if (!(RESOLUTIONS as readonly string[]).includes(requested)) {
      throw new InvalidInput('resolution', `resolution must be one of ${RESOLUTIONS.join(', ')}`);
    }
    resolution = requested as Resolution;
    if (!windowWithinCap(window.start, window.end, resolution)) {
      throw new InvalidInput('resolution', `the window is longer than the ${WINDOW_CAPS[resolution]} allowed with resolution ${resolution}`);
    }
  }
  const groupByText = optionalText(raw, 'groupBy');
  return {
    ...window,
    resolution,
    groupBy: groupByText === undefined ? [] : parseGroupBy(groupByText),
    filters: readFilters(raw),
    limit: readLimit(raw),
    cursor: optionalText(raw, 'cursor'),
  };
}

/** Validates the query string of endpoint 16 (a window only). */
export function parseWindowQuery(raw: RawQuery): MetricsWindow {
  rejectUnknown(raw, WINDOW_PARAMETERS);
  return readWindow(raw);
}

export function parseGroupBy(text: string): GroupDimension[] {
  const names = text.split(',').map((name) => name.trim());
  if (names.length > MAX_GROUP_BY) {
    throw new InvalidInput('groupBy', `groupBy accepts at most ${MAX_GROUP_BY} dimensions, got ${names.length}`);
  }
  const seen = new Set<string>();
  for (const name of names) {
    if (!(GROUP_BY_DIMENSIONS as readonly string[]).includes(name)) {
      throw new InvalidInput('groupBy', `groupBy has an invalid dimension '${name}'; valid: ${GROUP_BY_DIMENSIONS.join(', ')}`);
    }
    if (seen.has(name)) throw new InvalidInput('groupBy', `groupBy names dimension '${name}' twice`);
    seen.add(name);
  }
  return GROUP_BY_DIMENSIONS.filter((dimension) => seen.has(dimension));
}

function rejectUnknown(raw: RawQuery, allowed: Set<string>): void {
  for (const name of Object.keys(raw)) {
    if (!allowed.has(name)) throw new InvalidInput(name, `unsupported query parameter '${name}'`);
  }
}

function optionalText(raw: RawQuery, name: string): string | undefined {
  const value = raw[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new InvalidInput(name, `${name} must be given once, as a string`);
  return value;
}

function readWindow(raw: RawQuery): MetricsWindow {
  const start = readTime(raw, 'startTime');
  const end = readTime(raw, 'endTime');
  if (start >= end) throw new InvalidInput('startTime', 'startTime must be before endTime');
  return { start, end };
}

function readTime(raw: RawQuery, name: string): number {
  const text = optionalText(raw, name);
  if (text === undefined) throw new InvalidInput(name, `${name} is required`);
  const parsed = parseRfc3339(text);
  if (!parsed) throw new InvalidInput(name, `${name} must be an RFC 3339 date-time in UTC, e.g. 2026-04-16T00:00:00Z`);
  if (!parsed.utc) throw new InvalidInput(name, `${name} must be in UTC (end with Z)`);
  if (parsed.ms < MIN_TIME_MS || parsed.ms >= MAX_TIME_MS) {
    throw new InvalidInput(name, `${name} must lie between ${formatRfc3339(MIN_TIME_MS)} and ${formatRfc3339(MAX_TIME_MS)}`);
  }
  return parsed.ms;
}

function readFilters(raw: RawQuery): MetricsFilters {
  const filters: MetricsFilters = {};
  const text = (name: keyof MetricsFilters): string | undefined => {
    const value = optionalText(raw, name);
    if (value === undefined) return undefined;
    if (value === '' || value.length > MAX_FILTER_LENGTH) {
      throw new InvalidInput(name, `${name} must be between 1 and ${MAX_FILTER_LENGTH} characters`);
    }
    return value;
  };
  const workspace = text('workspace');
  if (workspace !== undefined) filters.workspace = workspace;
  const resourceType = text('resourceType');
  if (resourceType !== undefined) {
    if (!isResourceType(resourceType)) throw new InvalidInput('resourceType', `unknown resourceType '${resourceType}'`);
    filters.resourceType = resourceType;
  }
  const resourceName = text('resourceName');
  if (resourceName !== undefined) filters.resourceName = resourceName;
  const resourceUuid = text('resourceUuid');
  if (resourceUuid !== undefined) filters.resourceUuid = resourceUuid;
  const billingDimension = text('billingDimension');
  if (billingDimension !== undefined) {
    if (!isBillingDimension(billingDimension)) {
      throw new InvalidInput('billingDimension', `unknown billingDimension '${billingDimension}'`);
    }
    filters.billingDimension = billingDimension;
  }
  return filters;
}

function readLimit(raw: RawQuery): number {
  const text = optionalText(raw, 'limit');
  if (text === undefined) return DEFAULT_LIMIT;
  if (!/^[+-]?\d+$/.test(text.trim())) throw new InvalidInput('limit', 'limit must be an integer');
  const value = Number(text);
  if (value < 1) throw new InvalidInput('limit', 'limit must be at least 1');
  // Larger page sizes are clamped silently, as the contract says.
  return Math.min(value, MAX_LIMIT);
}
