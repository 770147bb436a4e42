import { BILLING_DIMENSION_NAMES, BILLING_DIMENSIONS, RESOURCE_TYPES } from './dimensions';
import { quantityToNano } from './decimal';
import { InvalidInput } from './errors';
import { legacyPayloadDigest } from './payload-digest';
import { MAX_TIME_MS, MIN_TIME_MS, parseRfc3339 } from './time';
import { encodeUsageBatch, UsageBatchWriter, type BodyEvent, type QuantityText, type UsageBatch } from './usage-batch';
import { EVENT_TEXT_LIMITS, MAX_EVENTS_PER_REQUEST, MAX_FUTURE_MS, MAX_QUANTITY, parseUsageEvents } from './usage-events';

/**
 * Encodes an ingestion request body `{"events": [...]}` priced at `prices`.
 *
 * Meters send ASCII JSON without escapes, and that form is read straight from the bytes: no
 * JSON.parse, no object per event, the resource's name and uuid copied into the rows as they
 * are. That is about half of what ingestion costs the API otherwise. Any other body (an escape,
 * a non-ASCII byte, a key twice, a mistake of any kind) goes the general way, JSON.parse then
 * parseUsageEvents, which also words every error. Both give the same batch.
 */
export function encodeUsageBody(accountId: string, body: Buffer, nowMs: number, prices: Map<string, bigint>): UsageBatch {
  // Only a reused id whose ledger row predates the current digest needs these: parsed on demand.
  let legacy: number[] | undefined;
  const legacyDigest = (index: number) => (legacy ??= parseUsageEvents(parseJsonBody(body), nowMs).map(legacyPayloadDigest))[index];
  const read = readPlainBody(accountId, body, nowMs, prices, legacyDigest);
  if (read) return read;
  return encodeUsageBatch(accountId, parseUsageEvents(parseJsonBody(body), nowMs), prices, legacyDigest);
}

function parseJsonBody(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString());
  } catch (err) {
    throw new InvalidInput('body', `the body is not valid JSON: ${(err as Error).message}`);
  }
}

/**
 * The batch of a body in the plain form, or undefined when the body is anything else. It accepts
 * exactly what parseUsageEvents accepts of that form: whitespace anywhere JSON allows it, fields
 * in any order, resourceUuid optional.
 */
export function readPlainBody(
  accountId: string,
  body: Buffer,
  nowMs: number,
  prices: Map<string, bigint>,
  legacyDigest: (index: number) => number,
): UsageBatch | undefined {
  const reader = new PlainBodyReader(body, nowMs);
  if (!reader.punctuation(OPEN_OBJECT) || reader.key() !== EVENTS_KEY || !reader.punctuation(COLON) || !reader.punctuation(OPEN_ARRAY)) return undefined;
  const capacity = Math.min(MAX_EVENTS_PER_REQUEST, Math.ceil(body.length / MIN_EVENT_BYTES));
  const writer = new UsageBatchWriter(accountId, capacity, prices, body);
  if (!reader.punctuation(CLOSE_ARRAY)) {
    for (let count = 1; ; count++) {
      // Beyond the capacity, the request is over its limit (or its events shorter than any valid one).
      if (count > capacity || !reader.event(writer)) return undefined;
      if (reader.punctuation(CLOSE_ARRAY)) break;
      if (!reader.punctuation(COMMA)) return undefined;
    }
  }
  return reader.punctuation(CLOSE_OBJECT) && reader.atEnd() ? writer.finish(legacyDigest) : undefined;
}

// The shortest event the API accepts takes more bytes than this, so a body of n bytes holds
// fewer than n / MIN_EVENT_BYTES events.
const MIN_EVENT_BYTES = 100;

const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

// Keys the reader knows, by number: the event's fields, then the body's one key.
const FIELDS = ['id', 'timestamp', 'workspace', 'resourceType', 'resourceName', 'resourceUuid', 'billingDimension', 'quantity'] as const;
const [ID, TIMESTAMP, WORKSPACE, RESOURCE_TYPE, RESOURCE_NAME, RESOURCE_UUID, BILLING_DIMENSION, QUANTITY] = FIELDS.map((_, i) => i);
const EVENTS_KEY = FIELDS.length;
const KEYS = [...FIELDS, 'events'].map((name) => Buffer.from(name, 'latin1'));
/** Every field but resourceUuid, as bits. */
const REQUIRED = ((1 << FIELDS.length) - 1) & ~(1 << RESOURCE_UUID);
const TEXT_LIMITS = FIELDS.map((name) => (name === 'quantity' ? undefined : EVENT_TEXT_LIMITS[name]));

/**
 * Values of the few distinct texts a request repeats (workspaces, quantities, known names), found
 * from their bytes without making a string of them.
 */
class TextTable<T> {
  /** By a hash of the bytes; texts sharing a hash are chained. */
  private readonly entries = new Map<number, TextEntry<T>>();

  get(source: Buffer, start: number, end: number): T | undefined {
    for (let entry = this.entries.get(textHash(source, start, end)); entry; entry = entry.next) {
      if (sameBytes(entry.bytes, source, start, end)) return entry.value;
    }
    return undefined;
  }

  set(source: Buffer, start: number, end: number, value: T): void {
    const key = textHash(source, start, end);
    this.entries.set(key, { bytes: Buffer.from(source.subarray(start, end)), value, next: this.entries.get(key) });
  }
}

interface TextEntry<T> {
  bytes: Buffer;
  value: T;
  next?: TextEntry<T>;
}

function textHash(source: Buffer, start: number, end: number): number {
  let h = 0x811c9dc5 ^ (end - start);
  for (let i = start; i < end; i++) h = Math.imul(h ^ source[i], 0x01000193);
  return h;
}

function sameBytes(bytes: Buffer, source: Buffer, start: number, end: number): boolean {
  if (bytes.length !== end - start) return false;
  for (let i = 0; i < bytes.length; i++) if (bytes[i] !== source[start + i]) return false;
  return true;
}

function tableOf<T>(entries: [string, T][]): TextTable<T> {
  const table = new TextTable<T>();
  for (const [name, value] of entries) {
    const bytes = Buffer.from(name, 'latin1');
    table.set(bytes, 0, bytes.length, value);
  }
  return table;
}

const RESOURCE_TYPE_NAMES = tableOf(RESOURCE_TYPES.map((type) => [type, type]));
const DIMENSIONS = tableOf(BILLING_DIMENSION_NAMES.map((name) => [name, { name, resourceType: BILLING_DIMENSIONS[name].resourceType }]));

/** Where the digits from `at` end. */
function afterDigits(body: Buffer, at: number): number {
  while (body[at] >= 0x30 && body[at] <= 0x39) at++;
  return at;
}

/** The digit at `at`; NaN if it is not one. */
function digitAt(body: Buffer, at: number): number {
  const digit = body[at] - 0x30;
  return digit >= 0 && digit <= 9 ? digit : NaN;
}

/** Stands for the quantity until the first event sets one. */
const NO_QUANTITY: QuantityText = { nano: 0n, digits: '', text: '', costs: new Map() };

/** Length of `YYYY-MM-DDTHH`, the hour of a canonical timestamp (the reader remembers the last one). */
const HOUR_PREFIX = 13;

class PlainBodyReader {
  private at = 0;
  // Where the value of each field starts and ends in the current event.
  private readonly starts = new Int32Array(FIELDS.length);
  private readonly ends = new Int32Array(FIELDS.length);
  // The last string or number read: body[valueStart..valueEnd].
  private valueStart = 0;
  private valueEnd = 0;
  private readonly workspaces = new TextTable<string>();
  /** Quantities by their JSON text; null: refused. */
  private readonly quantities = new TextTable<QuantityText | null>();
  // Events of a request mostly share the hour of their timestamps: the hour's start, for its
  // text (body[hourStart..hourStart + HOUR_PREFIX]); -1 for none yet.
  private hourStart = -1;
  private hourMs = 0;
  // Handed to the writer event after event: one object per request, not one per event.
  private readonly event_: BodyEvent = {
    idStart: 0,
    idEnd: 0,
    timeMs: 0,
    workspace: '',
    resourceType: '',
    nameStart: 0,
    nameEnd: 0,
    uuidStart: 0,
    uuidEnd: 0,
    billingDimension: '',
    quantity: NO_QUANTITY,
  };

  constructor(
    private readonly body: Buffer,
    private readonly nowMs: number,
  ) {}

  /** Skips whitespace, then takes `byte` if it comes next. */
  punctuation(byte: number): boolean {
    this.skipSpace();
    if (this.body[this.at] !== byte) return false;
    this.at++;
    return true;
  }

  atEnd(): boolean {
    this.skipSpace();
    return this.at === this.body.length;
  }

  /** The number of the key that comes next, or -1. */
  key(): number {
    if (!this.string()) return -1;
    const start = this.valueStart;
    const end = this.valueEnd;
    // Keys are told apart by length and one letter, then checked in full.
    let key: number;
    switch (end - start) {
      case 2: key = ID; break;
      case 6: key = EVENTS_KEY; break;
      case 8: key = QUANTITY; break;
      case 9: key = this.body[start] === 0x74 /* t */ ? TIMESTAMP : WORKSPACE; break;
      case 12: key = this.body[start + 8] === 0x54 /* T */ ? RESOURCE_TYPE : this.body[start + 8] === 0x4e /* N */ ? RESOURCE_NAME : RESOURCE_UUID; break;
      case 16: key = BILLING_DIMENSION; break;
      default: return -1;
    }
    return sameBytes(KEYS[key], this.body, start, end) ? key : -1;
  }

  /** Reads one event into `writer`; false when it is not a plain, valid event. */
  event(writer: UsageBatchWriter): boolean {
    if (!this.punctuation(OPEN_OBJECT)) return false;
    const { body, starts, ends } = this;
    let seen = 0;
    starts[RESOURCE_UUID] = ends[RESOURCE_UUID] = 0;
    do {
      const field = this.key();
      if (field < 0 || field === EVENTS_KEY || seen & (1 << field) || !this.punctuation(COLON)) return false;
      seen |= 1 << field;
      if (!(field === QUANTITY ? this.number() : this.string())) return false;
      const start = (starts[field] = this.valueStart);
      const end = (ends[field] = this.valueEnd);
      const limits = TEXT_LIMITS[field];
      if (limits && (end - start < limits.min || end - start > limits.max)) return false;
    } while (this.punctuation(COMMA));
    if (!this.punctuation(CLOSE_OBJECT) || (seen & REQUIRED) !== REQUIRED) return false;

    const timeMs = this.time(starts[TIMESTAMP], ends[TIMESTAMP]);
    if (timeMs === undefined || timeMs < MIN_TIME_MS || timeMs >= MAX_TIME_MS || timeMs > this.nowMs + MAX_FUTURE_MS) return false;
    const resourceType = RESOURCE_TYPE_NAMES.get(body, starts[RESOURCE_TYPE], ends[RESOURCE_TYPE]);
    const dimension = DIMENSIONS.get(body, starts[BILLING_DIMENSION], ends[BILLING_DIMENSION]);
    if (resourceType === undefined || dimension === undefined || dimension.resourceType !== resourceType) return false;
    const quantity = this.quantity(writer, starts[QUANTITY], ends[QUANTITY]);
    if (!quantity) return false;
    const event = this.event_;
    event.idStart = starts[ID];
    event.idEnd = ends[ID];
    event.timeMs = timeMs;
    event.workspace = this.workspace(starts[WORKSPACE], ends[WORKSPACE]);
    event.resourceType = resourceType;
    event.nameStart = starts[RESOURCE_NAME];
    event.nameEnd = ends[RESOURCE_NAME];
    event.uuidStart = starts[RESOURCE_UUID];
    event.uuidEnd = ends[RESOURCE_UUID];
    event.billingDimension = dimension.name;
    event.quantity = quantity;
    writer.addFromBody(event);
    return true;
  }

  /** A string of printable ASCII without escapes (its text: valueStart..valueEnd). */
  private string(): boolean {
    if (!this.punctuation(QUOTE)) return false;
    const body = this.body;
    const start = this.at;
    let at = start;
    for (;;) {
      const byte = body[at];
      if (byte === QUOTE) break;
      // Also stops at the end of the body (undefined).
      if (!(byte >= 0x20 && byte <= 0x7e) || byte === BACKSLASH) return false;
      at++;
    }
    this.valueStart = start;
    this.valueEnd = at;
    this.at = at + 1;
    return true;
  }

  /** A JSON number, by its grammar exactly (its text: valueStart..valueEnd). */
  private number(): boolean {
    this.skipSpace();
    const body = this.body;
    const start = this.at;
    let at = start;
    if (body[at] === 0x2d /* - */) at++;
    if (body[at] === 0x30 /* 0 */) at++;
    else if (!(body[at] >= 0x31 && body[at] <= 0x39)) return false;
    else at = afterDigits(body, at);
    if (body[at] === 0x2e /* . */) {
      const digits = afterDigits(body, at + 1);
      if (digits === at + 1) return false;
      at = digits;
    }
    if (body[at] === 0x65 || body[at] === 0x45 /* e E */) {
      at++;
      if (body[at] === 0x2b || body[at] === 0x2d /* + - */) at++;
      const digits = afterDigits(body, at);
      if (digits === at) return false;
      at = digits;
    }
    this.valueStart = start;
    this.valueEnd = at;
    this.at = at;
    return true;
  }

  /**
   * Epoch ms of the timestamp at start..end, or undefined if it is not one. parseRfc3339 reads
   * it, except the minutes, seconds and milliseconds of a canonical one in the last hour read.
   */
  private time(start: number, end: number): number | undefined {
    const body = this.body;
    const length = end - start;
    const canonical = (length === 20 || length === 24) && body[end - 1] === 0x5a; /* Z */
    if (canonical && this.hourStart >= 0) {
      let sameHour = true;
      for (let i = 0; i < HOUR_PREFIX && sameHour; i++) sameHour = body[start + i] === body[this.hourStart + i];
      if (sameHour) {
        const tail = this.canonicalTail(start, length);
        if (tail !== undefined) return this.hourMs + tail;
      }
    }
    const parsed = parseRfc3339(body.toString('latin1', start, end));
    if (!parsed) return undefined;
    if (canonical) {
      const tail = this.canonicalTail(start, length);
      if (tail !== undefined) {
        this.hourStart = start;
        this.hourMs = parsed.ms - tail;
      }
    }
    return parsed.ms;
  }

  /** Milliseconds into the hour of `:MM:SS[.mmm]Z` after a canonical timestamp's hour, or undefined. */
  private canonicalTail(start: number, length: number): number | undefined {
    const body = this.body;
    if (body[start + 13] !== COLON || body[start + 16] !== COLON) return undefined;
    const minute = 10 * digitAt(body, start + 14) + digitAt(body, start + 15);
    const second = 10 * digitAt(body, start + 17) + digitAt(body, start + 18);
    let millis = 0;
    if (length === 24) {
      if (body[start + 19] !== 0x2e /* . */) return undefined;
      millis = 100 * digitAt(body, start + 20) + 10 * digitAt(body, start + 21) + digitAt(body, start + 22);
    }
    // NaN (a non-digit) fails these too.
    if (!(minute <= 59 && second <= 59 && millis >= 0)) return undefined;
    return minute * 60_000 + second * 1000 + millis;
  }

  private workspace(start: number, end: number): string {
    let name = this.workspaces.get(this.body, start, end);
    if (name === undefined) {
      name = this.body.toString('latin1', start, end);
      this.workspaces.set(this.body, start, end, name);
    }
    return name;
  }

  /** The quantity of a JSON number's text, under the rules of parseEvent; undefined if refused. */
  private quantity(writer: UsageBatchWriter, start: number, end: number): QuantityText | undefined {
    let quantity = this.quantities.get(this.body, start, end);
    if (quantity === undefined) {
      const value = Number(this.body.toString('latin1', start, end));
      quantity = Number.isFinite(value) && value >= 0 && value <= MAX_QUANTITY ? writer.quantity(quantityToNano(value)) : null;
      this.quantities.set(this.body, start, end, quantity);
    }
    return quantity ?? undefined;
  }

  private skipSpace(): void {
    const body = this.body;
    let at = this.at;
    for (;;) {
      const byte = body[at];
      if (byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) break;
      at++;
    }
    this.at = at;
  }
}
