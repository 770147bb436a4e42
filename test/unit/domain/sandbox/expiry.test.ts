import { expirationPolicyProblem, nextExpiry } from '../../../../domain/sandbox/expiry';

const t0 = Date.parse('2026-11-01T00:00:00Z');

describe('sandbox expiry', () => {
  test('no ttl and no policy: never expires', () => {
    expect(nextExpiry({ policies: [], createdAt: t0, lastUsedAt: t0 })).toBeUndefined();
  });

  test('ttl is a maximum age from creation', () => {
    expect(nextExpiry({ ttl: '24h', policies: [], createdAt: t0, lastUsedAt: t0 + 5_000 })).toEqual({ at: t0 + 86_400_000, reason: 'ttl 24h reached' });
  });

  test('ttl-idle follows the last use; the earliest rule wins', () => {
    const policies = [
      { type: 'ttl-idle' as const, value: '30m', action: 'delete' as const },
      { type: 'ttl-max-age' as const, value: '1d', action: 'delete' as const },
    ];
    expect(nextExpiry({ policies, createdAt: t0, lastUsedAt: t0 + 60_000 })?.at).toBe(t0 + 60_000 + 1_800_000);
    expect(nextExpiry({ policies, createdAt: t0, lastUsedAt: t0 + 86_000_000 })).toEqual({ at: t0 + 86_400_000, reason: 'max age 1d reached' });
  });

  test('a date policy expires at that date', () => {
    const at = nextExpiry({ policies: [{ type: 'date', value: '2026-11-02T12:00:00Z', action: 'delete' }], createdAt: t0, lastUsedAt: t0 });
    expect(at).toEqual({ at: Date.parse('2026-11-02T12:00:00Z'), reason: 'expiration date 2026-11-02T12:00:00Z reached' });
  });

  test('spec.runtime.expires deletes at that instant, whichever of it and the ttl comes first', () => {
    const expires = new Date(t0 + 3_600_000).toISOString();
    expect(nextExpiry({ expires, policies: [], createdAt: t0, lastUsedAt: t0 })).toEqual({ at: t0 + 3_600_000, reason: `expiry ${expires} reached` });
    expect(nextExpiry({ ttl: '2h', expires, policies: [], createdAt: t0, lastUsedAt: t0 })?.at).toBe(t0 + 3_600_000);
    expect(nextExpiry({ ttl: '30m', expires, policies: [], createdAt: t0, lastUsedAt: t0 })).toEqual({ at: t0 + 1_800_000, reason: 'ttl 30m reached' });
  });

  test('invalid values are explained with their field', () => {
    expect(expirationPolicyProblem({ type: 'date', value: 'soon', action: 'delete' }, 'p[0]')).toContain('p[0].value');
    expect(expirationPolicyProblem({ type: 'ttl-idle', value: '5 minutes', action: 'delete' }, 'p[1]')).toContain('p[1].value');
    expect(expirationPolicyProblem({ type: 'ttl-max-age', value: '5m', action: 'delete' }, 'p[2]')).toBeUndefined();
  });
});
