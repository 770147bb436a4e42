import { hash } from 'node:crypto';
import type { UsageEvent } from './usage-events';

/**
 * Payload digests tell a re-sent event (same id, same content: a duplicate, counted once) from
 * a reused id with other content (409). The ledger keeps one per id.
 *
 * A digest is 2^52 plus 52 bits of a two-lane multiplicative hash, computed in JavaScript over
 * what the event says: it costs a tenth of a SHA-256 call per event, and ingestion digests
 * millions. It guards against mistakes, not forgery: a forged collision would only make a
 * changed event count as its first version, which is what a duplicate does anyway.
 *
 * Ledgers written before it hold the first 52 bits of SHA-256 over the event's text (see
 * legacyPayloadDigest), all below 2^52: the range of a stored digest says which function made it.
 */
export const DIGEST_MARK = 2 ** 52;

/** True when `stored` (from the ledger) says the same as the event whose digests are given. */
export function sameDigest(stored: number, digest: number, legacyDigest: () => number): boolean {
  return stored >= DIGEST_MARK ? stored === digest : stored === legacyDigest();
}

/**
 * Streams the parts of an event into its digest: first its time, then each text, each taken as
 * its length and its UTF-16 units (ASCII bytes, read from a request body, give the same units).
 */
export class PayloadDigester {
  private a = 0;
  private b = 0;

  begin(timeMs: number): this {
    this.a = SEED_A;
    this.b = SEED_B;
    this.unit(timeMs % 2 ** 32);
    return this.unit(Math.floor(timeMs / 2 ** 32));
  }

  text(value: string): this {
    let a = Math.imul(this.a ^ value.length, PRIME_A);
    let b = Math.imul(this.b ^ value.length, PRIME_B);
    for (let i = 0; i < value.length; i++) {
      const unit = value.charCodeAt(i);
      a = Math.imul(a ^ unit, PRIME_A);
      b = Math.imul(b ^ unit, PRIME_B);
    }
    this.a = a;
    this.b = b;
    return this;
  }

  /** Bytes start..end of `source`, all ASCII. */
  bytes(source: Uint8Array, start: number, end: number): this {
    let a = Math.imul(this.a ^ (end - start), PRIME_A);
    let b = Math.imul(this.b ^ (end - start), PRIME_B);
    for (let i = start; i < end; i++) {
      const unit = source[i];
      a = Math.imul(a ^ unit, PRIME_A);
      b = Math.imul(b ^ unit, PRIME_B);
    }
    this.a = a;
    this.b = b;
    return this;
  }

  /** The digest: each lane avalanched, mixed with the other, 52 bits of the two, marked. */
  value(): number {
    const a = avalanche(this.a ^ Math.imul(this.b, PRIME_B));
    const b = avalanche(this.b ^ a);
    return DIGEST_MARK + (a >>> 0) * 2 ** 20 + (b >>> 12);
  }

  private unit(value: number): this {
    this.a = Math.imul(this.a ^ value, PRIME_A);
    this.b = Math.imul(this.b ^ value, PRIME_B);
    return this;
  }
}

/** The digest of an event (`quantityDigits`: its nano-units as integer digits). */
export function payloadDigest(event: UsageEvent, quantityDigits = String(event.quantityNano), digester = new PayloadDigester()): number {
  return digester
    .begin(event.timeMs)
    .text(event.workspace)
    .text(event.resourceType)
    .text(event.resourceName)
    .text(event.resourceUuid)
    .text(event.billingDimension)
    .text(quantityDigits)
    .value();
}

/** The digest ledgers held before 2^52 marked them: the first 52 bits of SHA-256 over the event's text. */
export function legacyPayloadDigest(event: UsageEvent): number {
  const text = `${event.timeMs}\n${event.workspace}\n${event.resourceType}\n${event.resourceName}\n${event.resourceUuid}\n${event.billingDimension}\n${event.quantityNano}`;
  const digest = hash('sha256', text, 'binary');
  let value = 0;
  for (let i = 0; i < 6; i++) value = value * 256 + digest.charCodeAt(i);
  return value * 16 + (digest.charCodeAt(6) >> 4);
}

// Odd multipliers with well-spread bits, and distinct seeds, so that the lanes differ.
const PRIME_A = 0x9e3779b1;
const PRIME_B = 0x85ebca77;
const SEED_A = 0x2545f491;
const SEED_B = 0x6a09e667;

/** Spreads every input bit over the whole word (the finalizer of MurmurHash3). */
function avalanche(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}
