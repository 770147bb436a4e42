import fc from 'fast-check';
import { isValidName } from '../../../../domain/names';
import { forkEnvs, forkSpec, generatedSnapshotName } from '../../../../domain/sandbox/snapshot';

const envName = fc.constantFrom('A', 'B', 'C', 'D', 'PATH', 'HOME');
const envs = fc.uniqueArray(fc.record({ name: envName, value: fc.string({ maxLength: 5 }) }), { selector: (e) => e.name });

test("a fork's envs: the request's value wins, new ones are added, the source's others kept in order", () => {
  fc.assert(
    fc.property(envs, envs, (source, overrides) => {
      const result = forkEnvs(source, overrides);
      const byName = new Map(result.map((e) => [e.name, e.value]));
      expect(byName.size).toBe(result.length);
      for (const e of overrides) expect(byName.get(e.name)).toBe(e.value);
      for (const e of source) if (!overrides.some((o) => o.name === e.name)) expect(byName.get(e.name)).toBe(e.value);
      expect(result.slice(0, source.length).map((e) => e.name)).toEqual(source.map((e) => e.name));
      expect(new Set(result.map((e) => e.name))).toEqual(new Set([...source, ...overrides].map((e) => e.name)));
    }),
  );
});

test("a fork runs the source's image, memory, ports and region, not its lifetime rules or volumes", () => {
  const spec = forkSpec({
    region: 'eu',
    runtime: { image: 'base', memory: 512, ports: [{ target: 80 }], ttl: '1h', expires: '2030-01-01T00:00:00Z', envs: [{ name: 'A', value: '1' }] },
    lifecycle: { expirationPolicies: [{ type: 'ttl-idle', value: '5m', action: 'delete' }] },
    volumes: [{ name: 'v', mountPath: '/data' }],
  });
  expect(spec).toEqual({ region: 'eu', runtime: { image: 'base', memory: 512, ports: [{ target: 80 }], envs: [{ name: 'A', value: '1' }] } });
});

test('generated snapshot names are valid names, whatever the source', () => {
  fc.assert(
    fc.property(fc.stringMatching(/^[a-z][a-z0-9-]{0,48}$/), fc.stringMatching(/^[0-9a-f]{6}$/), (source, suffix) => {
      const name = generatedSnapshotName(source, suffix);
      expect(isValidName(name)).toBe(true);
      expect(name.endsWith(`-${suffix}`)).toBe(true);
    }),
  );
});
