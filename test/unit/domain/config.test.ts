import { loadConfig } from '../../../domain/config';

describe('HANGAR_SANDBOX_NETWORK', () => {
  test('sandboxes have outbound network unless the operator turns it off', () => {
    expect(loadConfig({}).sandboxNetwork).toBe(true);
    for (const on of ['on', 'ON', 'true', '1']) expect(loadConfig({ HANGAR_SANDBOX_NETWORK: on }).sandboxNetwork).toBe(true);
    for (const off of ['off', 'False', '0']) expect(loadConfig({ HANGAR_SANDBOX_NETWORK: off }).sandboxNetwork).toBe(false);
  });

  test('any other value is refused, naming the variable, rather than read as one or the other', () => {
    for (const value of ['yes', 'of', 'enabled']) expect(() => loadConfig({ HANGAR_SANDBOX_NETWORK: value })).toThrow(`HANGAR_SANDBOX_NETWORK must be on or off, got '${value}'`);
  });
});
