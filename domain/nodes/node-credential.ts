import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/** The header a gateway's request to a node listener carries its credential in. */
export const NODE_CREDENTIAL_HEADER = 'x-hangar-node-credential';

/**
 * How long a credential is good for. Each is signed for one request (method and path), so a
 * short life only bounds a replay of that same request; the slack covers clocks of different
 * hosts that disagree by a few seconds.
 */
export const NODE_CREDENTIAL_TTL_SECONDS = 30;

const VERSION = 'v1';

/**
 * The key node credentials are signed with, derived from the platform's master key (HKDF), so
 * every process holding the master key (gateways, node workers) agrees on it without a new
 * secret to distribute, and a leaked node key opens no sealed secret.
 */
export function nodeCredentialKey(masterKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'hangar node listener credential v1', 32));
}

function signature(key: Buffer, nodeId: string, expires: number, method: string, path: string): Buffer {
  // Newline-separated: none of the parts can hold one (a node id, a number, a method, a request target).
  return createHmac('sha256', key).update(`${VERSION}\n${nodeId}\n${expires}\n${method.toUpperCase()}\n${path}`).digest();
}

/**
 * A credential for one request to the listener of node `nodeId`: `v1.<expiry, unix seconds>.<HMAC>`,
 * bound to that node, the method and the path (with its query), valid NODE_CREDENTIAL_TTL_SECONDS.
 */
export function signNodeRequest(key: Buffer, nodeId: string, method: string, path: string, nowMs = Date.now()): string {
  const expires = Math.floor(nowMs / 1000) + NODE_CREDENTIAL_TTL_SECONDS;
  return `${VERSION}.${expires}.${signature(key, nodeId, expires, method, path).toString('base64url')}`;
}

/** Why a listener refuses a request: no credential (401), or one not valid for it (403). */
export type NodeCredentialRefusal = { status: 401 | 403; reason: string };

/**
 * Checks a request's credential on the listener of node `nodeId`: one signed with another key,
 * for another node, method or path, or expired is refused, as is a credential that lives longer
 * than any the platform signs.
 */
export function checkNodeRequest(key: Buffer, nodeId: string, method: string, path: string, credential: string | undefined, nowMs = Date.now()): NodeCredentialRefusal | undefined {
  if (!credential) return { status: 401, reason: `a node credential (${NODE_CREDENTIAL_HEADER}) is required` };
  const [version, expiresText, mac, extra] = credential.split('.');
  const expires = Number(expiresText);
  if (version !== VERSION || !/^\d{1,12}$/.test(expiresText ?? '') || !mac || extra !== undefined) return { status: 403, reason: 'the node credential is malformed' };
  const now = Math.floor(nowMs / 1000);
  if (expires < now) return { status: 403, reason: 'the node credential expired' };
  if (expires > now + 2 * NODE_CREDENTIAL_TTL_SECONDS) return { status: 403, reason: 'the node credential expires later than any the platform signs' };
  const given = Buffer.from(mac, 'base64url');
  const expected = signature(key, nodeId, expires, method, path);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { status: 403, reason: 'the node credential is not valid for this node and request' };
  return undefined;
}
