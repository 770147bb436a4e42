import { BILLING_DIMENSIONS, isBillingDimension, isResourceType, type BillingDimension, type ResourceType } from './dimensions';
import { quantityToNano } from './decimal';
import { InvalidInput } from './errors';
import { MAX_TIME_MS, MIN_TIME_MS, parseRfc3339 } from './time';

/** A usage event as accepted: validated, normalised, not yet priced. */
export interface UsageEvent {
  id: string;
  /** Event time in epoch ms as sent; stored at second precision (truncated). */
  timeMs: number;
  workspace: string;
  resourceType: ResourceType;
  resourceName: string;
  resourceUuid: string;
  billingDimension: BillingDimension;
  quantityNano: bigint;
}

export const MAX_EVENTS_PER_REQUEST = 10_000;
/** Meters' clocks drift; an event this far ahead of ours is a mistake, not drift. */
export const MAX_FUTURE_MS = 5 * 60_000;
export const MAX_QUANTITY = 1e15;
/** Length bounds of each text field, in UTF-16 units. */
export const EVENT_TEXT_LIMITS = {
  id: { min: 1, max: 128 },
  timestamp: { min: 1, max: 64 },
  workspace: { min: 1, max: 256 },
  resourceType: { min: 1, max: 256 },
  resourceName: { min: 1, max: 256 },
  resourceUuid: { min: 0, max: 256 },
  billingDimension: { min: 1, max: 256 },
} as const;
type TextField = keyof typeof EVENT_TEXT_LIMITS;
/** The most UTF-16 units of any text field (so, of an ASCII one, bytes). */
export const EVENT_TEXT_MAX_LENGTH = Math.max(...Object.values(EVENT_TEXT_LIMITS).map((limits) => limits.max));

const EVENT_FIELDS = new Set([
  'id',
  'timestamp',
  'workspace',
  'resourceType',
  'resourceName',
  'resourceUuid',
  'billingDimension',
  'quantity',
]);
// Control characters are refused in every text field, which keeps the payload hash's newline
// separators unambiguous; so are unpaired surrogates, which have no UTF-8 form.
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSTORABLE = /[\u0000-\u001f\u007f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Validates an ingestion body `{"events": [...]}`; the first bad event throws with its index and field. */
export function parseUsageEvents(body: unknown, nowMs: number): UsageEvent[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidInput('events', 'the body must be a JSON object {"events": [...]}');
  }
  for (const name of Object.keys(body)) {
    if (name !== 'events') throw new InvalidInput(name, `unsupported field '${name}'`);
  }
  const events = (body as { events?: unknown }).events;
  if (!Array.isArray(events)) throw new InvalidInput('events', 'events must be an array');
  if (events.length > MAX_EVENTS_PER_REQUEST) {
    throw new InvalidInput('events', `events holds ${events.length} events; at most ${MAX_EVENTS_PER_REQUEST} are accepted per request`);
  }
  // Meters repeat the same quantities (one per tick size): each is converted once per request.
  const quantities = new Map<number, bigint>();
  return events.map((event, index) => parseEvent(event, index, nowMs, quantities));
}

/** Validates one event; `index` names it in errors. `quantities` memoizes quantity conversions. */
export function parseEvent(raw: unknown, index: number, nowMs: number, quantities?: Map<number, bigint>): UsageEvent {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new InvalidInput('events', `events[${index}] must be an object`, index);
  }
  const event = raw as Record<string, unknown>;
  // for-in over a parsed JSON object sees exactly its own keys, without Object.keys' array.
  for (const name in event) {
    if (!EVENT_FIELDS.has(name)) throw fieldError(index, name, 'is not a supported field (unit and cost follow from the billing dimension)');
  }
  const id = textField(event, index, 'id');
  const timestamp = textField(event, index, 'timestamp');
  const parsed = parseRfc3339(timestamp);
  if (!parsed) throw fieldError(index, 'timestamp', 'must be an RFC 3339 date-time, e.g. 2026-04-16T12:00:00Z');
  if (parsed.ms < MIN_TIME_MS || parsed.ms >= MAX_TIME_MS) throw fieldError(index, 'timestamp', 'is outside 1970-2105');
  if (parsed.ms > nowMs + MAX_FUTURE_MS) throw fieldError(index, 'timestamp', 'is more than 5 minutes in the future');
  const workspace = textField(event, index, 'workspace');
  const resourceType = textField(event, index, 'resourceType');
  if (!isResourceType(resourceType)) throw fieldError(index, 'resourceType', `'${resourceType}' is not a known resource type`);
  const resourceName = textField(event, index, 'resourceName');
  const resourceUuid = event.resourceUuid === undefined ? '' : textField(event, index, 'resourceUuid');
  const billingDimension = textField(event, index, 'billingDimension');
  if (!isBillingDimension(billingDimension)) throw fieldError(index, 'billingDimension', `'${billingDimension}' is not a known billing dimension`);
  const expectedType = BILLING_DIMENSIONS[billingDimension].resourceType;
  if (resourceType !== expectedType) {
    throw fieldError(index, 'resourceType', `must be '${expectedType}' for billing dimension ${billingDimension}`);
  }
  const quantity = event.quantity;
  if (typeof quantity !== 'number' || !Number.isFinite(quantity) || quantity < 0) {
    throw fieldError(index, 'quantity', 'must be a finite non-negative number');
  }
  if (quantity > MAX_QUANTITY) throw fieldError(index, 'quantity', `must be at most ${MAX_QUANTITY}`);
  let quantityNano = quantities?.get(quantity);
  if (quantityNano === undefined) {
    quantityNano = quantityToNano(quantity);
    quantities?.set(quantity, quantityNano);
  }
  return {
    id,
    timeMs: parsed.ms,
    workspace,
    resourceType,
    resourceName,
    resourceUuid,
    billingDimension,
    quantityNano,
  };
}

function fieldError(index: number, field: string, message: string): InvalidInput {
  return new InvalidInput(field, `events[${index}].${field} ${message}`, index);
}

function textField(event: Record<string, unknown>, index: number, field: TextField): string {
  const { min, max } = EVENT_TEXT_LIMITS[field];
  const value = event[field];
  if (typeof value !== 'string') throw fieldError(index, field, 'must be a string');
  if (value.length < min || value.length > max) throw fieldError(index, field, `must be ${min} to ${max} characters long`);
  if (!PRINTABLE_ASCII.test(value) && UNSTORABLE.test(value)) throw fieldError(index, field, 'must not contain control characters or broken unicode');
  return value;
}
