import fc from 'fast-check';
import { listenerPath, parseListenerPath, type ListenerTarget } from '../../../../domain/nodes/listener-paths';
import { listenerEndpoint, parseNodeListen } from '../../../../domain/nodes/listener-address';
import { loadConfig } from '../../../../domain/config';

test('every listener path parses back to its target', () => {
  const id = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,20}$/);
  const rest = fc.stringMatching(/^\/[A-Za-z0-9/._-]{0,20}(\?[a-z=&]{0,10})?$/);
  const target: fc.Arbitrary<ListenerTarget> = fc.oneof(
    fc.record({ kind: fc.constant('sandbox-api' as const), sandboxId: id, rest }),
    fc.record({ kind: fc.constant('sandbox-port' as const), sandboxId: id, port: fc.integer({ min: 1, max: 65_535 }), rest }),
    fc.record({ kind: fc.constant('sandbox-frozen' as const), sandboxId: id }),
    fc.record({ kind: fc.constant('sandbox-thaw' as const), sandboxId: id }),
    fc.record({ kind: fc.constant('workload' as const), socketName: fc.tuple(id, fc.integer({ min: 1, max: 65_535 })).map(([s, p]) => `${s}-${p}.sock`), rest }),
  );
  fc.assert(fc.property(target, (t) => expect(parseListenerPath(listenerPath(t))).toEqual(t)));
});

test('paths naming no socket of the node, or escaping its folders, are not targets', () => {
  for (const path of ['/', '/sandboxes/', '/sandboxes/../x/api/', '/sandboxes/a/other', '/sandboxes/a/ports/0/', '/sandboxes/a/ports/70000/', '/workloads/../../etc/passwd', '/workloads/x.sock/', '/workloads/a-1.sock../']) {
    expect([path, parseListenerPath(path)]).toEqual([path, undefined]);
  }
  expect(parseListenerPath('/sandboxes/a/api')).toEqual({ kind: 'sandbox-api', sandboxId: 'a', rest: '/' });
  expect(parseListenerPath('/sandboxes/a/api?q=1')).toEqual({ kind: 'sandbox-api', sandboxId: 'a', rest: '/?q=1' });
});

test('HANGAR_NODE_LISTEN takes an address and a port, and the advertised URL follows from it', () => {
  expect(parseNodeListen('10.0.0.5:7443')).toEqual({ host: '10.0.0.5', port: 7443 });
  expect(parseNodeListen('[fd00::1]:7443')).toEqual({ host: 'fd00::1', port: 7443 });
  for (const bad of ['node-2:7443', '10.0.0.5', '10.0.0.5:0', '10.0.0.5:70000', ':7443']) expect(parseNodeListen(bad)).toHaveProperty('problem');
  expect(loadConfig({ HANGAR_NODE_LISTEN: '10.0.0.5:7443' }).nodeListenerUrl).toBe('http://10.0.0.5:7443');
  expect(() => loadConfig({ HANGAR_NODE_LISTEN: '0.0.0.0:7443' })).toThrow(/HANGAR_NODE_LISTENER_URL/);
  expect(loadConfig({ HANGAR_NODE_LISTEN: '0.0.0.0:7443', HANGAR_NODE_LISTENER_URL: 'http://node2.internal:7443' }).nodeListenerUrl).toBe('http://node2.internal:7443');
  expect(() => loadConfig({ HANGAR_NODE_LISTEN: 'x' })).toThrow(/HANGAR_NODE_LISTEN/);
  expect(loadConfig({}).nodeListen).toBeUndefined();
  expect(listenerEndpoint('http://[fd00::1]:7443')).toEqual({ host: 'fd00::1', port: 7443 });
});
