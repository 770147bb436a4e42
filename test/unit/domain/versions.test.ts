import { API_VERSIONS, DEFAULT_API_VERSION, resolveApiVersion } from '../../../domain/versions';

describe('Service-Version resolution', () => {
  test('absent header selects the earliest stable version', () => {
    expect(DEFAULT_API_VERSION).toBe('2026-04-16');
    expect(resolveApiVersion(undefined)).toEqual({ ok: true, version: '2026-04-16' });
  });

  test('every registered version is accepted as itself', () => {
    for (const { version } of API_VERSIONS) expect(resolveApiVersion(version)).toEqual({ ok: true, version });
  });

  test('2026-04-28, the version the reference SDK sends by default, is accepted as itself', () => {
    expect(resolveApiVersion('2026-04-28')).toEqual({ ok: true, version: '2026-04-28' });
  });

  test.each(['2026-04-17', '2025-01-01', '2026-04-16.preview', '2099-12-31.preview'])(
    'well-formed but unknown %s is refused, naming it and listing valid versions',
    (version) => {
      const result = resolveApiVersion(version);
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.message).toContain(`"${version}"`);
        expect(result.message).toContain('Valid versions: 2026-04-16');
        expect(result.message).toContain('not supported');
      }
    },
  );

  test.each(['', 'latest', '2026-4-16', '2026-04-16.beta', '2026-02-30', '2026-13-01', '20260416', ' 2026-04-16x', "2026-04-16' OR 1=1"])(
    'malformed %p is refused with the expected formats',
    (version) => {
      const result = resolveApiVersion(version);
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.message).toContain('YYYY-MM-DD');
        expect(result.message).toContain('Valid versions: 2026-04-16');
      }
    },
  );

  test('a very long header is cut in the message', () => {
    const result = resolveApiVersion('x'.repeat(10_000));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message.length).toBeLessThan(300);
  });
});
