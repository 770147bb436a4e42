import fc from 'fast-check';
import type { SandboxSpec } from '../../../../domain/sandbox/sandbox';
import { envsChanged, networkChanged, sandboxSpecChangeProblem, sandboxSpecProblem } from '../../../../domain/sandbox/spec-rules';

const running: SandboxSpec = {
  runtime: { image: 'base', memory: 512, envs: [{ name: 'A', value: '1' }], ports: [{ target: 8080 }], ttl: '1h' },
  lifecycle: { expirationPolicies: [{ type: 'ttl-idle', value: '30m', action: 'delete' }] },
  volumes: [{ name: 'data', mountPath: '/data' }],
};

const NOW = Date.parse('2026-11-25T00:00:00Z');

describe('sandbox spec rules', () => {
  test('a valid spec has no problem; a bad expiration policy is named by its index and field', () => {
    expect(sandboxSpecProblem(running, NOW)).toBeUndefined();
    expect(sandboxSpecProblem({}, NOW)).toBeUndefined();
    const bad: SandboxSpec = {
      lifecycle: {
        expirationPolicies: [
          { type: 'ttl-idle', value: '30m', action: 'delete' },
          { type: 'date', value: 'soon', action: 'delete' },
        ],
      },
    };
    expect(sandboxSpecProblem(bad, NOW)).toContain('body.spec.lifecycle.expirationPolicies[1].value');
  });

  test('ttl, expiration policies and a spec sent back unchanged may change on a running sandbox', () => {
    expect(sandboxSpecChangeProblem(running, running)).toBeUndefined();
    expect(sandboxSpecChangeProblem(running, JSON.parse(JSON.stringify(running)))).toBeUndefined();
    const relaxed: SandboxSpec = { ...running, runtime: { ...running.runtime, ttl: '2d' }, lifecycle: { expirationPolicies: [] } };
    expect(sandboxSpecChangeProblem(running, relaxed)).toBeUndefined();
  });

  test('envs may change on a running sandbox (issue 16: as the reference, for the processes started afterwards), and envsChanged says when they do', () => {
    const envs = fc.array(fc.record({ name: fc.constantFrom('A', 'B'), value: fc.constantFrom('1', '2') }), { maxLength: 3 });
    fc.assert(
      fc.property(envs, (value) => {
        const next: SandboxSpec = { ...running, runtime: { ...running.runtime, envs: value } };
        expect(sandboxSpecChangeProblem(running, next)).toBeUndefined();
        expect(envsChanged(running, next)).toBe(JSON.stringify(running.runtime?.envs) !== JSON.stringify(value));
      }),
    );
    // No envs and an empty list are the same environment.
    expect(envsChanged({ runtime: {} }, { runtime: { envs: [] } })).toBe(false);
  });

  test('any change of image, memory or ports is refused, naming the field', () => {
    const changes = fc.oneof(
      fc.record({ field: fc.constant('image' as const), value: fc.string({ minLength: 1, maxLength: 8 }).filter((v) => v !== 'base') }),
      fc.record({ field: fc.constant('memory' as const), value: fc.integer({ min: 64, max: 4096 }).filter((v) => v !== 512) }),
      fc.record({ field: fc.constant('ports' as const), value: fc.array(fc.record({ target: fc.integer({ min: 1, max: 65_535 }) }), { maxLength: 3 }) }),
    );
    fc.assert(
      fc.property(changes, ({ field, value }) => {
        const next: SandboxSpec = { ...running, runtime: { ...running.runtime, [field]: value } };
        const same = JSON.stringify(running.runtime?.[field]) === JSON.stringify(value);
        const problem = sandboxSpecChangeProblem(running, next);
        if (same) expect(problem).toBeUndefined();
        else expect(problem).toBe(`body.spec.runtime.${field} cannot change on a running sandbox; create a new sandbox instead`);
      }),
    );
  });

  test('volumes cannot change, nor be dropped', () => {
    const moved: SandboxSpec = { ...running, volumes: [{ name: 'data', mountPath: '/mnt' }] };
    expect(sandboxSpecChangeProblem(running, moved)).toBe('body.spec.volumes cannot change on a running sandbox; create a new sandbox instead');
    expect(sandboxSpecChangeProblem(running, { ...running, volumes: undefined })).toMatch(/^body\.spec\.volumes cannot change/);
  });

  test('spec.runtime.expires must be a date in the future, named; one sent back unchanged is not checked again', () => {
    const expiring = (expires: string): SandboxSpec => ({ runtime: { expires } });
    expect(sandboxSpecProblem(expiring('2026-11-25T00:00:01Z'), NOW)).toBeUndefined();
    expect(sandboxSpecProblem(expiring('2026-11-25T00:00:00Z'), NOW)).toBe('body.spec.runtime.expires must be in the future, got 2026-11-25T00:00:00Z');
    expect(sandboxSpecProblem(expiring('2026-02-30T99:00:00Z'), NOW)).toMatch(/^body\.spec\.runtime\.expires must be an RFC 3339 date/);
    const past = expiring('2026-11-24T00:00:00Z');
    expect(sandboxSpecProblem(past, NOW, past)).toBeUndefined();
    expect(sandboxSpecProblem(past, NOW, expiring('2026-11-26T00:00:00Z'))).toMatch(/^body\.spec\.runtime\.expires must be in the future/);
  });

  test('region, like the URL it makes, cannot change; expires and snapshotEnabled may', () => {
    const placed: SandboxSpec = { ...running, region: 'eu-1' };
    expect(sandboxSpecChangeProblem(placed, { ...placed, region: 'us-1' })).toBe('body.spec.region cannot change on a running sandbox; create a new sandbox instead');
    expect(sandboxSpecChangeProblem(running, placed)).toMatch(/^body\.spec\.region cannot change/);
    const later: SandboxSpec = { ...placed, runtime: { ...placed.runtime, expires: '2027-01-01T00:00:00Z', snapshotEnabled: true } };
    expect(sandboxSpecChangeProblem(placed, later)).toBeUndefined();
  });

  test('network domains change on a running sandbox; whether it has internet does not; a bad entry is named', () => {
    const open: SandboxSpec = { ...running, network: { allowedDomains: ['pypi.org'] } };
    const changed: SandboxSpec = { ...running, network: { forbiddenDomains: ['*.example.com'], proxy: { allowedDomains: ['203.0.113.0/24'] } } };
    expect(sandboxSpecChangeProblem(open, changed)).toBeUndefined();
    expect(networkChanged(open, changed)).toBe(true);
    expect(networkChanged(open, { ...open })).toBe(false);
    expect(sandboxSpecChangeProblem(open, { ...running, network: { internet: false } })).toBe(
      'body.spec.network.internet cannot change on a running sandbox; create a new sandbox instead',
    );
    expect(sandboxSpecChangeProblem(running, { ...running, network: { internet: true } })).toBeUndefined();
    expect(sandboxSpecProblem({ network: { allowedDomains: ['ok.example', 'not ok'] } }, NOW)).toMatch(/^body\.spec\.network\.allowedDomains\[1\] 'not ok'/);
  });
});
