import fc from 'fast-check';
import { blockedRange, formatIp, parseAllowedPrivateRanges, parseCidr, parseIp, type CidrBlock } from '../../../../domain/sandbox/ip-address';
import { addressVerdict, egressPolicy } from '../../../../domain/sandbox/network-policy';

const blocks = (text: string) => parseAllowedPrivateRanges(text, 'HANGAR_SANDBOX_ALLOWED_PRIVATE_RANGES') as CidrBlock[];

describe('private ranges the operator opens', () => {
  test('an opened block lets its addresses through and no others of the private range', () => {
    const opened = blocks('10.5.0.0/16, fd12::/16');
    expect(blockedRange(parseIp('10.5.3.4')!, [], opened)).toBeUndefined();
    expect(blockedRange(parseIp('::ffff:10.5.3.4')!, [], opened)).toBeUndefined();
    expect(blockedRange(parseIp('fd12::7')!, [], opened)).toBeUndefined();
    for (const address of ['10.6.0.1', '192.168.1.1', '172.16.0.1', '100.64.0.1', 'fd13::1']) expect(blockedRange(parseIp(address)!, [], opened)).toBeDefined();
  });

  test('loopback, link-local, the node and its subnet stay blocked inside an opened block', () => {
    const opened = blocks('10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,100.64.0.0/10,fc00::/7');
    const subnet = parseCidr('10.200.0.0/16') as CidrBlock;
    const node = parseCidr('10.5.0.1/32') as CidrBlock;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffff }), (low) => {
        const inSubnet = formatIp({ family: 4, value: subnet.base + BigInt(low) });
        expect(blockedRange(parseIp(inSubnet)!, [subnet, node], opened)).toBeDefined();
      }),
    );
    for (const address of ['10.5.0.1', '127.0.0.1', '169.254.169.254', '::1', 'fe80::1']) expect(blockedRange(parseIp(address)!, [subnet, node], opened)).toBeDefined();
  });

  test('the refusal says whether the operator could open the range', () => {
    const policy = egressPolicy(undefined);
    expect(addressVerdict(policy, 'mirror.corp', '10.5.0.9')).toEqual({
      allowed: false,
      rule: '10.0.0.0/8 is a private range the operator has not opened to sandboxes (HANGAR_SANDBOX_ALLOWED_PRIVATE_RANGES)',
    });
    expect(addressVerdict(policy, 'mirror.corp', '10.5.0.9', { allowedPrivate: blocks('10.5.0.0/16') })).toEqual({ allowed: true });
    expect(addressVerdict(policy, 'meta', '169.254.169.254', { allowedPrivate: blocks('10.0.0.0/8') })).toEqual({ allowed: false, rule: '169.254.0.0/16 is never reachable from a sandbox' });
    // A sandbox's own forbidden list still applies inside an opened block.
    expect(addressVerdict(egressPolicy({ forbiddenDomains: ['10.5.0.0/24'] }), 'x', '10.5.0.9', { allowedPrivate: blocks('10.5.0.0/16') }).allowed).toBe(false);
  });

  test('a malformed, public or loopback entry is an error naming the variable and the entry', () => {
    const problem = (text: string) => (parseAllowedPrivateRanges(text, 'HANGAR_SANDBOX_ALLOWED_PRIVATE_RANGES') as { problem: string }).problem;
    expect(problem('10.5.0.0/16,10.6.0.1/16')).toBe("HANGAR_SANDBOX_ALLOWED_PRIVATE_RANGES[1] '10.6.0.1/16' has host bits set (the block starts at 10.6.0.0/16)");
    expect(problem('10.5.0.0')).toContain("HANGAR_SANDBOX_ALLOWED_PRIVATE_RANGES[0] '10.5.0.0' is not a CIDR block");
    expect(problem('8.8.8.0/24')).toContain("[0] '8.8.8.0/24' is not inside a private range");
    expect(problem('127.0.0.0/8')).toContain('is not inside a private range');
    expect(problem('169.254.0.0/16')).toContain('is not inside a private range');
    expect(problem('10.0.0.0/7')).toContain('is not inside a private range');
    expect(blocks('')).toEqual([]);
  });
});
