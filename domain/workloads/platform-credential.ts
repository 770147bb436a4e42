import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/** Inside every workload: where the platform socket is and the credential it expects. */
export const PLATFORM_SOCKET_ENV = 'HANGAR_PLATFORM_SOCKET';
export const PLATFORM_TOKEN_ENV = 'HANGAR_PLATFORM_TOKEN';

/**
 * The credential of one deployment (one revision's sandbox) for the platform socket. Derived
 * rather than stored: any node holding the master key recomputes it from the sandbox id, so a
 * restarted worker accepts the tokens of workloads that kept running, and nothing about it is
 * written to the database or to workflow history. A sub-key keeps it apart from the encryption
 * uses of the master key.
 */
export function workloadPlatformToken(masterKey: Buffer, sandboxId: string): string {
  const subKey = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'hangar workload platform credential', 32));
  return createHmac('sha256', subKey).update(sandboxId).digest('base64url');
}

/** Constant-time comparison of a presented bearer credential with the expected one. */
export function isPlatformToken(presented: string | undefined, expected: string): boolean {
  if (typeof presented !== 'string') return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
