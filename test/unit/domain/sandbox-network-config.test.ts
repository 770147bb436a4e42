import { loadConfig } from '../../../domain/config';

describe("the operator's sandbox network settings", () => {
  test('the platform default policy and the opened private ranges are read, checked', () => {
    const config = loadConfig({
      HANGAR_SANDBOX_DEFAULT_NETWORK: '{"allowedDomains":["pypi.org","*.pythonhosted.org"]}',
      HANGAR_SANDBOX_ALLOWED_PRIVATE_RANGES: '10.5.0.0/16, fd12::/16',
    });
    expect(config.sandboxDefaultNetwork).toEqual({ allowedDomains: ['pypi.org', '*.pythonhosted.org'] });
    expect(config.sandboxAllowedPrivateRanges).toEqual(['10.5.0.0/16', 'fd12::/16']);
    const plain = loadConfig({});
    expect(plain.sandboxDefaultNetwork).toBeUndefined();
    expect(plain.sandboxAllowedPrivateRanges).toEqual([]);
  });

  test('bad input stops the start with an error naming the variable and the entry', () => {
    expect(() => loadConfig({ HANGAR_SANDBOX_DEFAULT_NETWORK: '{allowedDomains:' })).toThrow(/^HANGAR_SANDBOX_DEFAULT_NETWORK must be JSON/);
    expect(() => loadConfig({ HANGAR_SANDBOX_DEFAULT_NETWORK: '{"forbiddenDomains":["ok.example","bad_name!"]}' })).toThrow(
      "HANGAR_SANDBOX_DEFAULT_NETWORK.forbiddenDomains[1] 'bad_name!' is not a domain name",
    );
    expect(() => loadConfig({ HANGAR_SANDBOX_ALLOWED_PRIVATE_RANGES: '10.5.0.0/16,169.254.0.0/16' })).toThrow(
      "HANGAR_SANDBOX_ALLOWED_PRIVATE_RANGES[1] '169.254.0.0/16' is not inside a private range",
    );
  });
});
