import { parseNetworkSpec, resolvedNetwork } from '../../../../domain/sandbox/network-defaults';

describe('default network policies', () => {
  test("a sandbox's own policy wins over its workspace's, which wins over the platform's, whole", () => {
    const own = { allowedDomains: ['own.example'] };
    const workspace = { forbiddenDomains: ['ws.example'] };
    const platform = { internet: false };
    expect(resolvedNetwork(own, workspace, platform)).toBe(own);
    expect(resolvedNetwork(undefined, workspace, platform)).toBe(workspace);
    expect(resolvedNetwork(undefined, undefined, platform)).toBe(platform);
    expect(resolvedNetwork(undefined, undefined, undefined)).toBeUndefined();
    // An empty policy given by the sandbox is its own: open internet, no default applied.
    expect(resolvedNetwork({}, workspace, platform)).toEqual({});
  });

  test('a default given as data is checked like a sandbox spec, naming the place', () => {
    const at = 'HANGAR_SANDBOX_DEFAULT_NETWORK';
    expect(parseNetworkSpec({ allowedDomains: ['pypi.org', '*.pythonhosted.org'], proxy: { forbiddenDomains: ['10.0.0.0/8'] } }, at)).toEqual({
      allowedDomains: ['pypi.org', '*.pythonhosted.org'],
      proxy: { forbiddenDomains: ['10.0.0.0/8'] },
    });
    const problem = (value: unknown) => (parseNetworkSpec(value, at) as { problem: string }).problem;
    expect(problem({ allowedDomains: ['ok.example', 'exa mple.com'] })).toContain("HANGAR_SANDBOX_DEFAULT_NETWORK.allowedDomains[1] 'exa mple.com' is not a domain name");
    expect(problem({ proxy: { forbiddenDomains: ['10.0.0.1/8'] } })).toContain("HANGAR_SANDBOX_DEFAULT_NETWORK.proxy.forbiddenDomains[0] '10.0.0.1/8' has host bits set");
    expect(problem({ internet: 'no' })).toBe('HANGAR_SANDBOX_DEFAULT_NETWORK.internet must be true or false');
    expect(problem({ vpc: 'x' })).toContain('HANGAR_SANDBOX_DEFAULT_NETWORK.vpc is not a field');
    expect(problem({ proxy: { internet: false } })).toContain('HANGAR_SANDBOX_DEFAULT_NETWORK.proxy.internet is not a field');
    expect(problem({ allowedDomains: 'pypi.org' })).toBe('HANGAR_SANDBOX_DEFAULT_NETWORK.allowedDomains must be a list of strings');
    expect(problem([])).toBe('HANGAR_SANDBOX_DEFAULT_NETWORK must be an object');
  });
});
