import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { checkNodeRequest, nodeCredentialKey, NODE_CREDENTIAL_TTL_SECONDS, signNodeRequest } from '../../../../domain/nodes/node-credential';

const key = nodeCredentialKey(randomBytes(32));
const NOW = 1_800_000_000_000;

test('a credential passes for the node, method and path it was signed for, until it expires', () => {
  const credential = signNodeRequest(key, 'node-2', 'post', '/sandboxes/s1/api/process?x=1', NOW);
  expect(checkNodeRequest(key, 'node-2', 'POST', '/sandboxes/s1/api/process?x=1', credential, NOW)).toBeUndefined();
  expect(checkNodeRequest(key, 'node-2', 'POST', '/sandboxes/s1/api/process?x=1', credential, NOW + NODE_CREDENTIAL_TTL_SECONDS * 1000)).toBeUndefined();
  expect(checkNodeRequest(key, 'node-2', 'POST', '/sandboxes/s1/api/process?x=1', credential, NOW + (NODE_CREDENTIAL_TTL_SECONDS + 1) * 1000)).toEqual({ status: 403, reason: 'the node credential expired' });
});

test('no credential is a 401; one for another node, method, path or key is a 403', () => {
  const credential = signNodeRequest(key, 'node-2', 'GET', '/sandboxes/s1/api/files', NOW);
  expect(checkNodeRequest(key, 'node-2', 'GET', '/sandboxes/s1/api/files', undefined, NOW)?.status).toBe(401);
  expect(checkNodeRequest(key, 'node-2', 'GET', '/sandboxes/s1/api/files', '', NOW)?.status).toBe(401);
  const refusals = [
    checkNodeRequest(key, 'node-3', 'GET', '/sandboxes/s1/api/files', credential, NOW),
    checkNodeRequest(key, 'node-2', 'DELETE', '/sandboxes/s1/api/files', credential, NOW),
    checkNodeRequest(key, 'node-2', 'GET', '/sandboxes/s2/api/files', credential, NOW),
    checkNodeRequest(key, 'node-2', 'GET', '/sandboxes/s1/api/files?all', credential, NOW),
    checkNodeRequest(nodeCredentialKey(randomBytes(32)), 'node-2', 'GET', '/sandboxes/s1/api/files', credential, NOW),
  ];
  expect(refusals.map((refusal) => refusal?.status)).toEqual([403, 403, 403, 403, 403]);
});

test('a credential whose expiry was moved, or that lives longer than any signed, is refused', () => {
  const [version, expires, mac] = signNodeRequest(key, 'n', 'GET', '/p', NOW).split('.');
  expect(checkNodeRequest(key, 'n', 'GET', '/p', `${version}.${Number(expires) + 60}.${mac}`, NOW)?.status).toBe(403);
  expect(checkNodeRequest(key, 'n', 'GET', '/p', signNodeRequest(key, 'n', 'GET', '/p', NOW + 3_600_000), NOW)).toEqual({ status: 403, reason: 'the node credential expires later than any the platform signs' });
});

test('no altered or arbitrary credential passes (generated)', () => {
  const good = signNodeRequest(key, 'node-2', 'GET', '/sandboxes/s1/api/', NOW);
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.string().map((tail) => good.slice(0, -tail.length - 1) + tail)), (credential) => {
      fc.pre(credential !== good);
      expect(checkNodeRequest(key, 'node-2', 'GET', '/sandboxes/s1/api/', credential, NOW)?.status).toBeGreaterThanOrEqual(401);
    }),
  );
});

test('the key is derived: the same master key gives the same key, never the master key itself', () => {
  const master = randomBytes(32);
  expect(nodeCredentialKey(master).equals(nodeCredentialKey(Buffer.from(master)))).toBe(true);
  expect(nodeCredentialKey(master).equals(master)).toBe(false);
});
