import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Seconds since the epoch at which the callback was signed (a fresh value on every attempt). */
export const CALLBACK_TIMESTAMP_HEADER = 'x-service-timestamp';
/** `v1=<hex HMAC-SHA256 over "<timestamp>.<body>">` with the workspace's callback secret. */
export const CALLBACK_SIGNATURE_HEADER = 'x-service-signature';

/** A new signing secret: 32 random bytes, with a prefix that says what it is when it turns up somewhere. */
export function newCallbackSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

function digest(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

/**
 * The headers that let a callback's receiver check that Hangar sent it: the signature covers the
 * timestamp as well as the body, so a receiver that refuses old timestamps also refuses replays.
 */
export function signCallback(secret: string, body: string, timestamp = Math.floor(Date.now() / 1000)): Record<string, string> {
  return { [CALLBACK_TIMESTAMP_HEADER]: String(timestamp), [CALLBACK_SIGNATURE_HEADER]: `v1=${digest(secret, timestamp, body)}` };
}

/**
 * What a receiver does (and what the README shows): recompute the signature over the raw body
 * and compare in constant time, refusing timestamps further than `toleranceSeconds` from now.
 */
export function verifyCallback(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  body: string,
  toleranceSeconds = 300,
  now = Date.now(),
): boolean {
  const timestamp = Number(headers[CALLBACK_TIMESTAMP_HEADER]);
  const signature = headers[CALLBACK_SIGNATURE_HEADER];
  if (!Number.isInteger(timestamp) || typeof signature !== 'string' || !signature.startsWith('v1=')) return false;
  if (Math.abs(now / 1000 - timestamp) > toleranceSeconds) return false;
  const expected = Buffer.from(digest(secret, timestamp, body), 'hex');
  const given = Buffer.from(signature.slice(3), 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
