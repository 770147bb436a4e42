import { randomBytes } from 'node:crypto';
import { digest, displayPrefix, looksLikeApiKey, newApiKey, newClientSecret, secretMatches } from '../../../domain/credentials';
import { SecretBox } from '../../../domain/secret-box';

describe('API keys and secrets', () => {
  test('keys are distinct, recognisable and stored as digests only', () => {
    const a = newApiKey();
    const b = newApiKey();
    expect(a).not.toBe(b);
    expect(looksLikeApiKey(a)).toBe(true);
    expect(looksLikeApiKey('eyJhbGciOi.x.y')).toBe(false);
    expect(digest(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(digest(a)).not.toContain(a);
    expect(displayPrefix(a)).toHaveLength(10);
    expect(a.startsWith(displayPrefix(a))).toBe(true);
  });

  test('secret comparison accepts only the exact secret', () => {
    const secret = newClientSecret();
    const stored = digest(secret);
    expect(secretMatches(secret, stored)).toBe(true);
    expect(secretMatches(secret + 'x', stored)).toBe(false);
    expect(secretMatches('', stored)).toBe(false);
    expect(secretMatches(secret, 'not-hex')).toBe(false);
  });
});

describe('SecretBox', () => {
  const box = new SecretBox(randomBytes(32));

  test('round-trips and never contains the plaintext', () => {
    const sealed = box.seal('super secret value ✓', 'row-1');
    expect(sealed).not.toContain('super secret');
    expect(box.open(sealed, 'row-1')).toBe('super secret value ✓');
  });

  test('sealing twice gives different ciphertexts', () => {
    expect(box.seal('x')).not.toBe(box.seal('x'));
  });

  test('a value moved to another row, a tampered value or another key fails to open', () => {
    const sealed = box.seal('value', 'row-1');
    expect(() => box.open(sealed, 'row-2')).toThrow();
    const parts = sealed.split('.');
    const flipped = Buffer.from(parts[3], 'base64url');
    flipped[0] ^= 1;
    expect(() => box.open([parts[0], parts[1], parts[2], flipped.toString('base64url')].join('.'), 'row-1')).toThrow();
    expect(() => new SecretBox(randomBytes(32)).open(sealed, 'row-1')).toThrow();
    expect(() => box.open('garbage', 'row-1')).toThrow();
  });

  test('refuses keys of the wrong size', () => {
    expect(() => new SecretBox(randomBytes(16))).toThrow('32 bytes');
  });
});
