import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API keys and client secrets are 256-bit random values, so a plain SHA-256 digest is enough to
 * store them: there is nothing to brute-force, and lookup by digest stays a single index probe.
 */
export const API_KEY_PREFIX = 'hgr_';
const CLIENT_SECRET_PREFIX = 'hgs_';

export function newApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function newClientSecret(): string {
  return CLIENT_SECRET_PREFIX + randomBytes(32).toString('base64url');
}

export function newClientId(): string {
  return 'hgc_' + randomBytes(12).toString('base64url');
}

export function digest(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function secretMatches(secret: string, storedDigest: string): boolean {
  const a = Buffer.from(digest(secret), 'hex');
  const b = Buffer.from(storedDigest, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The first characters of a key, safe to show so users can tell keys apart. */
export function displayPrefix(apiKey: string): string {
  return apiKey.slice(0, API_KEY_PREFIX.length + 6);
}

export function looksLikeApiKey(token: string): boolean {
  return token.startsWith(API_KEY_PREFIX) && /^[A-Za-z0-9_-]+$/.test(token);
}
