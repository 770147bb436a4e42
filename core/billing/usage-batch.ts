import { hash } from 'node:crypto';
import { costNano, formatScaled, QUANTITY_SCALE } from './decimal';
import type { UsageEvent } from './usage-events';

/**
 * A request's validated events, encoded once into what their acceptance writes: 16-byte
 * idempotency keys and payload digests for the ledger, and the ClickHouse rows (TabSeparated,
 * cost included) for the outbox. Only flat buffers and numbers stay alive while the database
 * works, not one object per event: ingestion holds several 10,000-event requests at a time.
 */
export interface UsageBatch {
  accountId: string;
  size: number;
  /** Event ids, for error messages. */
  ids: string[];
  /** Key i (bytes 16i to 16i+16): the ledger's uuid of event i, see writeEventKey. */
  keys: Buffer;
  /** Payload digest of event i, see payloadDigest: below 2^52, exact as a double. */
  hashes: Float64Array;
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

/** Encodes events priced at `prices` (pico-USD per unit of each dimension). */
export function encodeUsageBatch(accountId: string, events: UsageEvent[], prices: Map<string, bigint>): UsageBatch {
  const size = events.length;
  const keys = Buffer.allocUnsafe(16 * size);
  const hashes = new Float64Array(size);
  const rowEnds = new Uint32Array(size);
  const seconds = new Uint32Array(size);
  const ids = new Array<string>(size);
  const workspaces = new Map<string, number>();
  // Meters repeat a few quantities: each is rendered (and priced, per dimension) once per request.
  const quantities = new Map<bigint, QuantityText>();
  const account = tsvField(accountId);
  const keyPrefix = eventKeyPrefix(accountId);
  let rows = Buffer.allocUnsafe(Math.max(1024, size * 256));
  let length = 0;
  for (let i = 0; i < size; i++) {
    const event = events[i];
    let quantity = quantities.get(event.quantityNano);
    if (quantity === undefined) {
      quantity = { digits: String(event.quantityNano), text: formatScaled(event.quantityNano, QUANTITY_SCALE), costs: new Map() };
      quantities.set(event.quantityNano, quantity);
    }
    let cost = quantity.costs.get(event.billingDimension);
    if (cost === undefined) {
      const price = prices.get(event.billingDimension);
      if (price === undefined) throw new Error(`no price for billing dimension ${event.billingDimension}`);
      cost = formatScaled(costNano(event.quantityNano, price), QUANTITY_SCALE);
      quantity.costs.set(event.billingDimension, cost);
    }
    ids[i] = event.id;
    writeEventKey(keys, 16 * i, keyPrefix, event.id);
    hashes[i] = payloadDigest(event, quantity.digits);
    const second = Math.floor(event.timeMs / 1000);
    seconds[i] = second;
    if (!workspaces.has(event.workspace)) workspaces.set(event.workspace, i);
    const row =
      `${account}\t${tsvField(event.id)}\t${second}\t${tsvField(event.workspace)}\t${event.resourceType}\t` +
      `${tsvField(event.resourceName)}\t${tsvField(event.resourceUuid)}\t${event.billingDimension}\t${quantity.text}\t${cost}\n`;
    // A UTF-16 unit is at most 3 UTF-8 bytes: room for the row is known without measuring it.
    if (length + 3 * row.length > rows.length) {
      const grown = Buffer.allocUnsafe(2 * rows.length + 3 * row.length);
      rows.copy(grown, 0, 0, length);
      rows = grown;
    }
    length += rows.write(row, length);
    rowEnds[i] = length;
  }
  return { accountId, size, ids, keys, hashes, rows: rows.subarray(0, length), rowEnds, seconds, workspaces };
}

interface QuantityText {
  /** Nano-units as integer digits, as the payload digest reads them. */
  digits: string;
  /** Decimal text at the column's scale. */
  text: string;
  /** Cost text by billing dimension. */
  costs: Map<string, string>;
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
 * Digest of what an event says (not its id): the first 52 bits of SHA-256, plenty to tell a
 * re-sent event from a different one under the same id, and exact in a double.
 */
export function payloadDigest(event: UsageEvent, quantityDigits = String(event.quantityNano)): number {
  const text = `${event.timeMs}\n${event.workspace}\n${event.resourceType}\n${event.resourceName}\n${event.resourceUuid}\n${event.billingDimension}\n${quantityDigits}`;
  const digest = hash('sha256', text, 'binary');
  let value = 0;
  for (let i = 0; i < 6; i++) value = value * 256 + digest.charCodeAt(i);
  return value * 16 + (digest.charCodeAt(6) >> 4);
}

/**
 * The ledger rows of the batch as PostgreSQL's binary COPY data for (event_key uuid, payload_hash bigint), in key order: the keys are random, and
 * inserting a request's keys in order lets the unique index's descents share the pages they
 * read (about a quarter less PostgreSQL CPU on a ledger of millions). Requests sharing ids also
 * take their keys' locks in one order, so they wait for each other instead of deadlocking.
 */
export function ledgerCopyData(batch: UsageBatch): Buffer {
  const order = inKeyOrder(batch.keys, Array.from({ length: batch.size }, (_, i) => i));
  const data = Buffer.allocUnsafe(COPY_HEADER.length + order.length * ROW_BYTES + 2);
  COPY_HEADER.copy(data, 0);
  let at = COPY_HEADER.length;
  for (const i of order) {
    data.writeInt16BE(2, at);
    data.writeInt32BE(16, at + 2);
    batch.keys.copy(data, at + 6, 16 * i, 16 * i + 16);
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
 * `indices` in key order. Each is packed with its position and the leading bits of its key into
 * one exact double (at most 52 bits), so a numeric typed-array sort does nearly all the work.
 */
function inKeyOrder(keys: Buffer, indices: number[]): number[] {
  const positionBits = Math.max(1, Math.ceil(Math.log2(indices.length + 1)));
  const slots = 2 ** positionBits;
  const prefixScale = 2 ** (52 - positionBits - 40);
  const packed = new Float64Array(indices.length);
  for (let n = 0; n < indices.length; n++) {
    // The key's first 40 bits, shortened to what leaves room for the position.
    const prefix = Math.floor(keys.readUIntBE(16 * indices[n], 5) * prefixScale);
    packed[n] = prefix * slots + n;
  }
  packed.sort();
  const order = Array.from(packed, (value) => indices[value % slots]);
  // Keys sharing those leading bits (almost never) are put in full order by insertion.
  const samePrefix = (n: number) => Math.floor(packed[n - 1] / slots) === Math.floor(packed[n] / slots);
  for (let n = 1; n < order.length; n++) {
    if (!samePrefix(n)) continue;
    for (let m = n; m > 0 && samePrefix(m) && compareKeys(keys, order[m - 1], order[m]) > 0; m--) {
      [order[m - 1], order[m]] = [order[m], order[m - 1]];
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
