import { hash } from 'node:crypto';
import { costNano, formatScaled, QUANTITY_SCALE } from './decimal';
import { legacyPayloadDigest, payloadDigest, PayloadDigester } from './payload-digest';
import { EVENT_TEXT_MAX_LENGTH, type UsageEvent } from './usage-events';

/**
 * A request's validated events, encoded once into what their acceptance writes: 16-byte
 * idempotency keys and payload digests for the ledger, and the ClickHouse rows (TabSeparated,
 * cost included) for the outbox. Only flat buffers and numbers stay alive while the database
 * works, not one object per event: ingestion holds several 10,000-event requests at a time.
 */
export interface UsageBatch {
  accountId: string;
  size: number;
  /** Event i's id, for error messages. */
  idOf: (index: number) => string;
  /** Key i (bytes 16i to 16i+16): the ledger's uuid of event i, see writeEventKey. */
  keys: Buffer;
  /** Payload digest of event i, see payload-digest.ts: exact as a double. */
  hashes: Float64Array;
  /** The digest of event i as ledgers written before the current digest hold it (see sameDigest). */
  legacyDigest: (index: number) => number;
  /** Row i is rows[rowEnds[i-1] (or 0) .. rowEnds[i]), newline included. */
  rows: Buffer;
  rowEnds: Uint32Array;
  /** Epoch second each event is stored and counted at. */
  seconds: Uint32Array;
  /** Each workspace named, with the index of its first event. */
  workspaces: Map<string, number>;
}

/** The rows of ClickHouse's raw table, in this column order. */
export const RAW_COLUMNS = 'account_id, id, event_time, workspace, resource_type, resource_name, resource_uuid, billing_dimension, quantity, cost';

/** How a quantity is written, priced and digested; the same few recur in a request. */
export interface QuantityText {
  nano: bigint;
  /** Nano-units as integer digits, as the payload digest reads them. */
  digits: string;
  /** Decimal text at the column's scale. */
  text: string;
  /** Cost text by billing dimension. */
  costs: Map<string, string>;
}

/**
 * An event read from a request body whose texts are ASCII without escapes (see usage-body.ts):
 * its id, resource name and uuid stay bytes of the body (start..end), copied as they are.
 */
export interface BodyEvent {
  idStart: number;
  idEnd: number;
  timeMs: number;
  workspace: string;
  resourceType: string;
  nameStart: number;
  nameEnd: number;
  uuidStart: number;
  uuidEnd: number;
  billingDimension: string;
  quantity: QuantityText;
}

/**
 * Builds a UsageBatch event by event, from parsed events (any text) or straight from the bytes of
 * a request body. Both write the same rows, keys and digests.
 */
export class UsageBatchWriter {
  private readonly keys: Buffer;
  private readonly hashes: Float64Array;
  private readonly rowEnds: Uint32Array;
  private readonly seconds: Uint32Array;
  /** Ids of parsed events; those of body events are read back from the body when asked for. */
  private readonly ids: string[] = [];
  private readonly idStarts: Uint32Array;
  private readonly idEnds: Uint32Array;
  private readonly workspaces = new Map<string, number>();
  private readonly quantities = new Map<bigint, QuantityText>();
  private readonly digester = new PayloadDigester();
  private readonly account: string;
  private readonly keyPrefix: string;
  /** The key prefix's bytes, followed by room for an id: what a body event's key digests. */
  private readonly keyInput: Buffer;
  private readonly keyPrefixBytes: number;
  /** Views of keyInput by id length: a digest needs one of exactly the input's length. */
  private readonly keyInputViews: Uint8Array[] = [];
  private readonly accountBytes: Buffer;
  private rows: Buffer;
  private length = 0;
  private size = 0;

  constructor(
    private readonly accountId: string,
    capacity: number,
    /** Pico-USD per unit of each billing dimension. */
    private readonly prices: Map<string, bigint>,
    /** The request body that addFromBody reads events from. */
    private readonly body?: Buffer,
  ) {
    this.keys = Buffer.allocUnsafe(16 * capacity);
    this.hashes = new Float64Array(capacity);
    this.rowEnds = new Uint32Array(capacity);
    this.seconds = new Uint32Array(capacity);
    this.idStarts = new Uint32Array(body ? capacity : 0);
    this.idEnds = new Uint32Array(body ? capacity : 0);
    this.rows = Buffer.allocUnsafe(Math.max(1024, capacity * 256));
    this.account = tsvField(accountId);
    this.keyPrefix = eventKeyPrefix(accountId);
    this.keyPrefixBytes = Buffer.byteLength(this.keyPrefix);
    this.keyInput = Buffer.alloc(this.keyPrefixBytes + EVENT_TEXT_MAX_LENGTH);
    this.keyInput.write(this.keyPrefix);
    this.accountBytes = Buffer.from(this.account);
  }

  /** The quantity's texts; meters repeat a few quantities, each is rendered once per request. */
  quantity(quantityNano: bigint): QuantityText {
    let quantity = this.quantities.get(quantityNano);
    if (quantity === undefined) {
      quantity = { nano: quantityNano, digits: String(quantityNano), text: formatScaled(quantityNano, QUANTITY_SCALE), costs: new Map() };
      this.quantities.set(quantityNano, quantity);
    }
    return quantity;
  }

  /** A parsed event. */
  add(event: UsageEvent): void {
    const quantity = this.quantity(event.quantityNano);
    this.ids[this.size] = event.id;
    writeEventKey(this.keys, 16 * this.size, this.keyPrefix, event.id);
    const second = this.begin(event.timeMs, event.workspace);
    this.hashes[this.size] = payloadDigest(event, quantity.digits, this.digester);
    const row =
      `${this.account}\t${tsvField(event.id)}\t${second}\t${tsvField(event.workspace)}\t${event.resourceType}\t` +
      `${tsvField(event.resourceName)}\t${tsvField(event.resourceUuid)}\t${event.billingDimension}\t${quantity.text}\t${this.cost(quantity, event.billingDimension)}\n`;
    // A UTF-16 unit is at most 3 UTF-8 bytes: room for the row is known without measuring it.
    this.reserve(3 * row.length);
    this.length += this.rows.write(row, this.length);
    this.rowEnds[this.size++] = this.length;
  }

  /** An event read from the body: the same row as add() writes, put together piece by piece. */
  addFromBody(event: BodyEvent): void {
    const body = this.body!;
    const { quantity, idStart, idEnd } = event;
    const i = this.size;
    this.idStarts[i] = idStart;
    this.idEnds[i] = idEnd;
    // The key digests the prefix and the id's bytes, which are its UTF-8 form as with add().
    const input = this.keyInput;
    const prefixLength = this.keyPrefixBytes;
    for (let from = idStart, to = prefixLength; from < idEnd; ) input[to++] = body[from++];
    const view = (this.keyInputViews[idEnd - idStart] ??= new Uint8Array(input.buffer, input.byteOffset, prefixLength + idEnd - idStart));
    this.keys.write(hash('sha256', view, 'binary'), 16 * i, 16, 'binary');
    const second = this.begin(event.timeMs, event.workspace);
    this.hashes[i] = this.digester
      .begin(event.timeMs)
      .text(event.workspace)
      .text(event.resourceType)
      .bytes(body, event.nameStart, event.nameEnd)
      .bytes(body, event.uuidStart, event.uuidEnd)
      .text(event.billingDimension)
      .text(quantity.digits)
      .value();
    const cost = this.cost(quantity, event.billingDimension);
    // Digits of the second included, no field is longer than EVENT_TEXT_MAX_LENGTH bytes (ASCII).
    this.reserve(this.accountBytes.length + 10 * EVENT_TEXT_MAX_LENGTH);
    this.copy(this.accountBytes, 0, this.accountBytes.length, TAB);
    this.copy(body, idStart, idEnd, TAB);
    this.digits(second, TAB);
    this.ascii(event.workspace, TAB);
    this.ascii(event.resourceType, TAB);
    this.copy(body, event.nameStart, event.nameEnd, TAB);
    this.copy(body, event.uuidStart, event.uuidEnd, TAB);
    this.ascii(event.billingDimension, TAB);
    this.ascii(quantity.text, TAB);
    this.ascii(cost, NEWLINE);
    this.rowEnds[this.size++] = this.length;
  }

  finish(legacyDigest: (index: number) => number): UsageBatch {
    const { accountId, size, ids, idStarts, idEnds, body, workspaces } = this;
    return {
      accountId,
      size,
      idOf: (index) => ids[index] ?? body!.toString('latin1', idStarts[index], idEnds[index]),
      keys: this.keys.subarray(0, 16 * size),
      hashes: this.hashes.subarray(0, size),
      legacyDigest,
      rows: this.rows.subarray(0, this.length),
      rowEnds: this.rowEnds.subarray(0, size),
      seconds: this.seconds.subarray(0, size),
      workspaces,
    };
  }

  /** What every event records besides its key, digest and row; returns its epoch second. */
  private begin(timeMs: number, workspace: string): number {
    const i = this.size;
    const second = Math.floor(timeMs / 1000);
    this.seconds[i] = second;
    if (!this.workspaces.has(workspace)) this.workspaces.set(workspace, i);
    return second;
  }

  private cost(quantity: QuantityText, dimension: string): string {
    let cost = quantity.costs.get(dimension);
    if (cost === undefined) {
      const price = this.prices.get(dimension);
      if (price === undefined) throw new Error(`no price for billing dimension ${dimension}`);
      cost = costText(quantity.nano, price);
      quantity.costs.set(dimension, cost);
    }
    return cost;
  }

  private reserve(bytes: number): void {
    if (this.length + bytes <= this.rows.length) return;
    const grown = Buffer.allocUnsafe(2 * this.rows.length + bytes);
    this.rows.copy(grown, 0, 0, this.length);
    this.rows = grown;
  }

  /** ASCII text without backslashes (nothing to escape), then `end`. */
  private ascii(text: string, end: number): void {
    const rows = this.rows;
    let at = this.length;
    for (let i = 0; i < text.length; i++) rows[at++] = text.charCodeAt(i);
    rows[at++] = end;
    this.length = at;
  }

  /** Bytes start..stop of `source` (ASCII without backslashes), then `end`. */
  private copy(source: Buffer, start: number, stop: number, end: number): void {
    const rows = this.rows;
    let at = this.length;
    for (let i = start; i < stop; i++) rows[at++] = source[i];
    rows[at++] = end;
    this.length = at;
  }

  /** A non-negative integer in decimal, then `end`. */
  private digits(value: number, end: number): void {
    let width = 1;
    for (let power = 10; power <= value; power *= 10) width++;
    const rows = this.rows;
    let rest = value;
    for (let at = this.length + width - 1; at >= this.length; at--) {
      rows[at] = 0x30 + (rest % 10);
      rest = Math.floor(rest / 10);
    }
    rows[this.length + width] = end;
    this.length += width + 1;
  }
}

/**
 * The cost of a quantity at a price, as text. Requests repeat the quantities and prices of the
 * requests before them, so the texts are kept across requests (up to a bound).
 */
function costText(quantityNano: bigint, pricePico: bigint): string {
  let atPrice = COST_TEXTS.get(pricePico);
  if (atPrice === undefined) {
    if (COST_TEXTS.size >= MAX_COST_TEXTS) COST_TEXTS.clear();
    atPrice = new Map();
    COST_TEXTS.set(pricePico, atPrice);
  }
  let text = atPrice.get(quantityNano);
  if (text === undefined) {
    text = formatScaled(costNano(quantityNano, pricePico), QUANTITY_SCALE);
    if (atPrice.size >= MAX_COST_TEXTS) atPrice.clear();
    atPrice.set(quantityNano, text);
  }
  return text;
}

const COST_TEXTS = new Map<bigint, Map<bigint, string>>();
const MAX_COST_TEXTS = 100_000;

const TAB = 0x09;
const NEWLINE = 0x0a;

/** Encodes parsed events priced at `prices` (pico-USD per unit of each dimension). */
export function encodeUsageBatch(
  accountId: string,
  events: UsageEvent[],
  prices: Map<string, bigint>,
  legacyDigest = (index: number) => legacyPayloadDigest(events[index]),
): UsageBatch {
  const writer = new UsageBatchWriter(accountId, events.length, prices);
  for (const event of events) writer.add(event);
  return writer.finish(legacyDigest);
}

/** Hour starts (epoch seconds) the events at `indices` (all when omitted) fall in (the outbox row lists them for the flush). */
export function batchHours(batch: UsageBatch, indices?: number[]): number[] {
  const hours = new Set<number>();
  const add = (i: number) => hours.add(batch.seconds[i] - (batch.seconds[i] % 3600));
  if (indices) indices.forEach(add);
  else for (let i = 0; i < batch.size; i++) add(i);
  return [...hours];
}

/** The rows of the events at `indices` (ascending), as one buffer. */
export function selectRows(batch: UsageBatch, indices: number[]): Buffer {
  return Buffer.concat(indices.map((i) => batch.rows.subarray(i === 0 ? 0 : batch.rowEnds[i - 1], batch.rowEnds[i])));
}

/**
 * A string as a TabSeparated field. Validation refuses control characters, so tab and newline
 * never occur; a backslash is escaped, so nothing can read as an escape sequence (or \N).
 */
export function tsvField(value: string): string {
  return value.includes('\\') ? value.replaceAll('\\', '\\\\') : value;
}

/**
 * Idempotency key of an event: the first 16 bytes of SHA-256 over eventKeyPrefix(account) and
 * the id, written at `offset`. Fixed-width keys keep the ledger index small whatever ids meters
 * choose.
 */
export function writeEventKey(target: Buffer, offset: number, prefix: string, id: string): void {
  target.write(hash('sha256', prefix + id, 'binary'), offset, 16, 'binary');
}

/** The account's part of its events' keys; the length keeps account/id boundaries apart. */
export function eventKeyPrefix(accountId: string): string {
  return `${accountId.length}:${accountId}`;
}

/** The key as PostgreSQL prints a uuid. */
export function eventKeyText(keys: Buffer, index: number): string {
  const hex = keys.toString('hex', 16 * index, 16 * index + 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/**
 * The ledger rows of the batch as PostgreSQL's binary COPY data for (event_key uuid, payload_hash bigint), in key order: the keys are random, and
 * inserting a request's keys in order lets the unique index's descents share the pages they
 * read (about a quarter less PostgreSQL CPU on a ledger of millions). Requests sharing ids also
 * take their keys' locks in one order, so they wait for each other instead of deadlocking.
 */
export function ledgerCopyData(batch: UsageBatch): Buffer {
  const order = inKeyOrder(batch.keys, batch.size);
  const data = Buffer.allocUnsafe(COPY_HEADER.length + order.length * ROW_BYTES + 2);
  COPY_HEADER.copy(data, 0);
  let at = COPY_HEADER.length;
  for (let n = 0; n < order.length; n++) {
    const i = order[n];
    data.writeInt16BE(2, at);
    data.writeInt32BE(16, at + 2);
    // Byte by byte: Buffer.copy would make a view object per key.
    for (let b = 0; b < 16; b++) data[at + 6 + b] = batch.keys[16 * i + b];
    data.writeInt32BE(8, at + 22);
    const digest = batch.hashes[i];
    data.writeUInt32BE(Math.floor(digest / 2 ** 32), at + 26);
    data.writeUInt32BE(digest % 2 ** 32, at + 30);
    at += ROW_BYTES;
  }
  data.writeInt16BE(-1, at);
  return data;
}

/**
 * The outbox row of the events at `indices` (all when omitted) as PostgreSQL's binary COPY data for
 * (account_id text, event_count integer, hours bigint[], tsv text), in pieces: the rows are
 * sent as they are, never copied into a query message (ingestion sends megabytes per request).
 */
export function outboxCopyData(batch: UsageBatch, indices?: number[]): Buffer[] {
  const hours = batchHours(batch, indices);
  const rows = indices ? selectRows(batch, indices) : batch.rows;
  const account = Buffer.from(batch.accountId);
  const arrayBytes = 20 + 12 * hours.length;
  const head = Buffer.allocUnsafe(COPY_HEADER.length + 2 + 4 + account.length + 8 + 4 + arrayBytes + 4);
  let at = COPY_HEADER.copy(head, 0);
  at = head.writeInt16BE(4, at);
  at = head.writeInt32BE(account.length, at);
  at += account.copy(head, at);
  at = head.writeInt32BE(4, at);
  at = head.writeInt32BE(indices ? indices.length : batch.size, at);
  // An array: dimensions, no nulls, element type int8, then its length and lower bound.
  at = head.writeInt32BE(arrayBytes, at);
  for (const word of [1, 0, INT8_OID, hours.length, 1]) at = head.writeInt32BE(word, at);
  for (const hour of hours) {
    at = head.writeInt32BE(8, at);
    at = head.writeBigInt64BE(BigInt(hour), at);
  }
  head.writeInt32BE(rows.length, at);
  return [head, rows, COPY_TRAILER];
}

const INT8_OID = 20;
const COPY_TRAILER = Buffer.from([0xff, 0xff]);

/**
 * The first `count` keys' indices in key order. Each is packed with its index and the leading bits
 * of its key into one exact double (at most 52 bits), so a numeric typed-array sort does nearly
 * all the work.
 */
function inKeyOrder(keys: Buffer, count: number): Uint32Array {
  const indexBits = Math.max(1, Math.ceil(Math.log2(count + 1)));
  const slots = 2 ** indexBits;
  const prefixScale = 2 ** (52 - indexBits - 40);
  const packed = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    // The key's first 40 bits, shortened to what leaves room for the index.
    const prefix = Math.floor(keys.readUIntBE(16 * i, 5) * prefixScale);
    packed[i] = prefix * slots + i;
  }
  packed.sort();
  const order = new Uint32Array(count);
  for (let n = 0; n < count; n++) order[n] = packed[n] % slots;
  // Keys sharing those leading bits (almost never) are put in full order by insertion.
  const samePrefix = (n: number) => Math.floor(packed[n - 1] / slots) === Math.floor(packed[n] / slots);
  for (let n = 1; n < count; n++) {
    if (!samePrefix(n)) continue;
    for (let m = n; m > 0 && samePrefix(m) && compareKeys(keys, order[m - 1], order[m]) > 0; m--) {
      const swapped = order[m - 1];
      order[m - 1] = order[m];
      order[m] = swapped;
    }
  }
  return order;
}

function compareKeys(keys: Buffer, a: number, b: number): number {
  return keys.compare(keys, 16 * b, 16 * b + 16, 16 * a, 16 * a + 16);
}

// Signature, flags (no oids), header extension length: see PostgreSQL's COPY binary format.
const COPY_HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
// Field count, then length and value of the uuid and of the bigint.
const ROW_BYTES = 2 + 4 + 16 + 4 + 8;
