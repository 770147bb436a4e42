import { randomBytes, randomUUID } from 'node:crypto';

/** Opaque identifiers with a readable prefix saying what they name. */
export function newId(prefix: 'acc' | 'ws' | 'sa' | 'key' | 'kid'): string {
  return `${prefix}_${randomBytes(12).toString('base64url')}`;
}

export function newUuid(): string {
  return randomUUID();
}
