import fc from 'fast-check';
import { blockedRange, formatIp, parseCidr, parseIp, type CidrBlock } from '../../../../domain/sandbox/ip-address';
import { addressVerdict, aliasVerdict, egressPolicy, hostVerdict, networkSpecProblem, parseNetworkRule } from '../../../../domain/sandbox/network-policy';

describe('addresses', () => {
  test('IPv4 and IPv6 parse strictly and print back', () => {
    expect(formatIp(parseIp('203.0.113.7')!)).toBe('203.0.113.7');
    expect(parseIp('::1')).toEqual({ family: 6, value: 1n });
    expect(parseIp('[::ffff:10.0.0.1]')?.value).toBe((0xffffn << 32n) | 0x0a000001n);
    for (const bad of ['127.1', '010.0.0.1', '1.2.3.256', '1::2::3', '1:2:3:4:5:6:7:8:9', 'example.com', '']) expect(parseIp(bad)).toBeUndefined();
  });

  test('any IPv4 address prints as it parses', () => {
    fc.assert(
      fc.property(fc.ipV4(), (text) => {
        expect(formatIp(parseIp(text)!)).toBe(text);
      }),
    );
  });

  test('a CIDR block with host bits set is refused, naming where the block starts', () => {
    expect(parseCidr('10.1.2.3/8')).toEqual({ problem: 'has host bits set (the block starts at 10.0.0.0/8)' });
    expect(parseCidr('10.0.0.0/33')).toEqual({ problem: 'has a prefix longer than 32 bits' });
    expect(parseCidr('10.0.0.0/8')).toMatchObject({ family: 4, prefix: 8 });
  });

  test('private, loopback, link-local and metadata addresses are always blocked, mapped IPv6 forms included', () => {
    for (const address of ['10.1.2.3', '127.0.0.1', '169.254.169.254', '172.20.0.1', '192.168.1.1', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fd00::1', '::ffff:169.254.169.254', '::ffff:127.0.0.1']) {
      expect(blockedRange(parseIp(address)!)).toBeDefined();
    }
    for (const address of ['203.0.113.7', '8.8.8.8', '2001:db8::1']) expect(blockedRange(parseIp(address)!)).toBeUndefined();
  });
});

describe('validation', () => {
  test('a malformed entry is named by its place in the spec', () => {
    expect(networkSpecProblem({ allowedDomains: ['example.com', '*.example.org', 'exa mple.com'] })).toBe(
      "body.spec.network.allowedDomains[2] 'exa mple.com' is not a domain name (optionally '*.' and a domain), an IP address or a CIDR block",
    );
    expect(networkSpecProblem({ proxy: { forbiddenDomains: ['10.0.0.1/8'] } })).toBe(
      "body.spec.network.proxy.forbiddenDomains[0] '10.0.0.1/8' has host bits set (the block starts at 10.0.0.0/8)",
    );
    for (const bad of ['*', '*.', 'a.*.com', '-a.com', '1.2.3', 'http://example.com', 'example.com:443']) {
      expect(networkSpecProblem({ forbiddenDomains: [bad] })).toMatch(/^body\.spec\.network\.forbiddenDomains\[0\] /);
    }
    expect(networkSpecProblem({ allowedDomains: ['Example.COM.', '*.a.b', '203.0.113.0/24', '2001:db8::/32', '::1'], internet: true })).toBeUndefined();
  });

  test('any domain name fast-check makes is accepted, as is its wildcard', () => {
    fc.assert(
      fc.property(fc.domain(), (name) => {
        expect(parseNetworkRule(name)).toMatchObject({ kind: 'domain' });
        expect(parseNetworkRule(`*.${name}`)).toMatchObject({ kind: 'wildcard' });
      }),
    );
  });
});

describe('decisions', () => {
  test('no spec.network: everything not always blocked', () => {
    const policy = egressPolicy(undefined);
    expect(hostVerdict(policy, 'example.com')).toEqual({ allowed: true });
    expect(addressVerdict(policy, 'example.com', '203.0.113.7')).toEqual({ allowed: true });
    expect(addressVerdict(policy, 'metadata.internal', '169.254.169.254')).toEqual({ allowed: false, rule: '169.254.0.0/16 is never reachable from a sandbox' });
  });

  test('internet: false refuses everything', () => {
    const policy = egressPolicy({ internet: false, allowedDomains: ['example.com'] });
    expect(hostVerdict(policy, 'example.com')).toEqual({ allowed: false, rule: 'spec.network.internet is false' });
  });

  test('an allow list admits only what it names; a literal address does not pass for an allowed name', () => {
    const policy = egressPolicy({ allowedDomains: ['pypi.org'], proxy: { allowedDomains: ['*.pythonhosted.org', '203.0.113.0/28'] } });
    expect(hostVerdict(policy, 'PyPI.org.')).toEqual({ allowed: true });
    expect(hostVerdict(policy, 'files.pythonhosted.org')).toEqual({ allowed: true });
    expect(hostVerdict(policy, 'pythonhosted.org')).toEqual({ allowed: false, rule: 'not in spec.network.allowedDomains' });
    expect(hostVerdict(policy, 'evilpypi.org')).toEqual({ allowed: false, rule: 'not in spec.network.allowedDomains' });
    expect(hostVerdict(policy, '203.0.113.9')).toEqual({ allowed: true });
    expect(hostVerdict(policy, '203.0.113.20')).toEqual({ allowed: false, rule: 'not in spec.network.allowedDomains' });
  });

  test('allowed wins when both lists name a host; forbidden addresses hold for names resolving into them', () => {
    const policy = egressPolicy({ allowedDomains: [], forbiddenDomains: ['*.example.com', '203.0.113.0/24'] });
    expect(hostVerdict(policy, 'a.example.com')).toEqual({ allowed: false, rule: "spec.network.forbiddenDomains entry '*.example.com'" });
    expect(hostVerdict(policy, 'example.org')).toEqual({ allowed: true });
    expect(addressVerdict(policy, 'example.org', '203.0.113.5')).toEqual({ allowed: false, rule: "spec.network.forbiddenDomains entry '203.0.113.0/24'" });
    const both = egressPolicy({ allowedDomains: ['a.example.com'], forbiddenDomains: ['*.example.com', '203.0.113.0/24'] });
    expect(hostVerdict(both, 'a.example.com')).toEqual({ allowed: true });
    expect(addressVerdict(both, 'a.example.com', '203.0.113.5')).toEqual({ allowed: true });
  });

  test('an alias to a forbidden name is refused, unless the allow list named the host asked for', () => {
    const forbidding = egressPolicy({ forbiddenDomains: ['*.tracker.example'] });
    expect(aliasVerdict(forbidding, 'innocent.example', 'x.tracker.example')).toEqual({
      allowed: false,
      rule: "innocent.example is an alias of x.tracker.example: spec.network.forbiddenDomains entry '*.tracker.example'",
    });
    expect(aliasVerdict(forbidding, 'innocent.example', 'cdn.example')).toEqual({ allowed: true });
    const both = egressPolicy({ allowedDomains: ['pypi.org'], forbiddenDomains: ['*.fastly.net'] });
    expect(aliasVerdict(both, 'pypi.org', 'dualstack.pypi.map.fastly.net')).toEqual({ allowed: true });
  });

  test('whatever the policy, an address in a node-blocked or always-blocked range is refused', () => {
    const subnet = parseCidr('198.51.100.0/24') as CidrBlock;
    fc.assert(
      fc.property(fc.array(fc.domain(), { maxLength: 3 }), fc.integer({ min: 0, max: 255 }), (allowedDomains, last) => {
        const policy = egressPolicy({ allowedDomains: [...allowedDomains, '0.0.0.0/0'] });
        expect(addressVerdict(policy, `198.51.100.${last}`, `198.51.100.${last}`, { nodeBlocked: [subnet] }).allowed).toBe(false);
        expect(addressVerdict(policy, 'x.example', `10.0.0.${last}`, { nodeBlocked: [subnet] }).allowed).toBe(false);
      }),
    );
  });
});
