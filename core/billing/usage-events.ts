import { hash } from 'node:crypto';
import { BILLING_DIMENSIONS, isBillingDimension, isResourceType, type BillingDimension, type ResourceType } from './dimensions';
import { formatScaled, quantityToNano, QUANTITY_SCALE } from './decimal';
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
const MAX_ID_LENGTH = 128;
const MAX_TEXT_LENGTH = 256;

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
  return events.map((event, index) => parseEvent(event, index, nowMs));
}

/** Validates one event; `index` names it in errors. */
export function parseEvent(raw: unknown, index: number, nowMs: number): UsageEvent {
  const fail = (field: string, message: string) => new InvalidInput(field, `events[${index}].${field} ${message}`, index);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new InvalidInput('events', `events[${index}] must be an object`, index);
  }
  const event = raw as Record<string, unknown>;
  for (const name of Object.keys(event)) {
    if (!EVENT_FIELDS.has(name)) throw fail(name, 'is not a supported field (unit and cost follow from the billing dimension)');
  }
  const text = (field: string, min: number, max: number): string => {
    const value = event[field];
    if (typeof value !== 'string') throw fail(field, 'must be a string');
    if (value.length < min || value.length > max) throw fail(field, `must be ${min} to ${max} characters long`);
    if (!PRINTABLE_ASCII.test(value) && UNSTORABLE.test(value)) throw fail(field, 'must not contain control characters or broken unicode');
    return value;
  };

  const id = text('id', 1, MAX_ID_LENGTH);
  const timestamp = text('timestamp', 1, 64);
  const parsed = parseRfc3339(timestamp);
  if (!parsed) throw fail('timestamp', 'must be an RFC 3339 date-time, e.g. 2026-04-16T12:00:00Z');
  if (parsed.ms < MIN_TIME_MS || parsed.ms >= MAX_TIME_MS) throw fail('timestamp', 'is outside 1970-2105');
  if (parsed.ms > nowMs + MAX_FUTURE_MS) throw fail('timestamp', 'is more than 5 minutes in the future');
  const workspace = text('workspace', 1, MAX_TEXT_LENGTH);
  const resourceType = text('resourceType', 1, MAX_TEXT_LENGTH);
  if (!isResourceType(resourceType)) throw fail('resourceType', `'${resourceType}' is not a known resource type`);
  const resourceName = text('resourceName', 1, MAX_TEXT_LENGTH);
  const resourceUuid = event.resourceUuid === undefined ? '' : text('resourceUuid', 0, MAX_TEXT_LENGTH);
  const billingDimension = text('billingDimension', 1, MAX_TEXT_LENGTH);
  if (!isBillingDimension(billingDimension)) throw fail('billingDimension', `'${billingDimension}' is not a known billing dimension`);
  const expectedType = BILLING_DIMENSIONS[billingDimension].resourceType;
  if (resourceType !== expectedType) {
    throw fail('resourceType', `must be '${expectedType}' for billing dimension ${billingDimension}`);
  }
  const quantity = event.quantity;
  if (typeof quantity !== 'number' || !Number.isFinite(quantity) || quantity < 0) {
    throw fail('quantity', 'must be a finite non-negative number');
  }
  if (quantity > MAX_QUANTITY) throw fail('quantity', `must be at most ${MAX_QUANTITY}`);
  return {
    id,
    timeMs: parsed.ms,
    workspace,
    resourceType,
    resourceName,
    resourceUuid,
    billingDimension,
    quantityNano: quantityToNano(quantity),
  };
}

/**
 * Idempotency key of an event: a UUID-shaped digest of account and event id. Fixed-width keys
 * keep the ledger index small whatever ids meters choose.
 */
export function eventKey(accountId: string, id: string): string {
  const hex = hash('sha256', `${accountId.length}:${accountId}${id}`, 'hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/**
 * Digest of what an event says (not its id), as decimal text: 52 bits of SHA-256, plenty to
 * tell a re-sent event from a different one under the same id.
 */
export function payloadHash(event: UsageEvent): string {
  const text = `${event.timeMs}\n${event.workspace}\n${event.resourceType}\n${event.resourceName}\n${event.resourceUuid}\n${event.billingDimension}\n${event.quantityNano}`;
  return String(parseInt(hash('sha256', text, 'hex').slice(0, 13), 16));
}

/** Epoch second an event is stored and counted at. */
export function eventSecond(event: UsageEvent): number {
  return Math.floor(event.timeMs / 1000);
}

/**
 * The event as one JSONEachRow line of the ClickHouse raw table. Decimals are written as bare
 * numbers at the column's scale, which both 18.16 and current servers read exactly.
 */
export function clickhouseRow(accountId: string, event: UsageEvent, costNano: bigint): string {
  return (
    `{"account_id":${JSON.stringify(accountId)},"id":${JSON.stringify(event.id)},"event_time":${eventSecond(event)},` +
    `"workspace":${JSON.stringify(event.workspace)},"resource_type":"${event.resourceType}",` +
    `"resource_name":${JSON.stringify(event.resourceName)},"resource_uuid":${JSON.stringify(event.resourceUuid)},` +
    `"billing_dimension":"${event.billingDimension}","quantity":${formatScaled(event.quantityNano, QUANTITY_SCALE)},` +
    `"cost":${formatScaled(costNano, QUANTITY_SCALE)}}`
  );
}
