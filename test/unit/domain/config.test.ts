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

describe('node settings', () => {
  test('labels are parsed; a bad one names the variable and the entry', () => {
    expect(loadConfig({ HANGAR_NODE_LABELS: 'zone=a,gpu=none' }).nodeLabels).toEqual({ zone: 'a', gpu: 'none' });
    expect(() => loadConfig({ HANGAR_NODE_LABELS: 'zone' })).toThrow("HANGAR_NODE_LABELS: 'zone' is not a label");
  });

  test('a node is LOST after 60 s by default; a limit not past UNREACHABLE is refused', () => {
    expect(loadConfig({}).nodeLostSeconds).toBe(60);
    expect(loadConfig({ HANGAR_NODE_LOST_SECONDS: '30' }).nodeLostSeconds).toBe(30);
    expect(() => loadConfig({ HANGAR_NODE_LOST_SECONDS: '10' })).toThrow('HANGAR_NODE_LOST_SECONDS must be more than 10');
  });
});
