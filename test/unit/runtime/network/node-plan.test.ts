import { overlappingRoute } from '../../../../runtime/network/host-network';
import { nodeNetworkPlan } from '../../../../runtime/network/sandbox-network';

const plan = nodeNetworkPlan({ dataDir: '/unused', subnet: '10.200.0.0/16' });

test("a node's bridge and tables are named after its subnet, so two installations never share them", () => {
  const other = nodeNetworkPlan({ dataDir: '/unused', subnet: '10.252.16.0/20' });
  expect(plan).toMatchObject({ bridge: 'hg0ac80000', table: 'hangar_0ac80000', gateway: '10.200.0.1', prefix: 16 });
  expect(other).toMatchObject({ bridge: 'hg0afc1000', table: 'hangar_0afc1000', gateway: '10.252.16.1', prefix: 20 });
  expect(plan.bridge.length).toBeLessThanOrEqual(15);
});

test('a subnet that is not an IPv4 block from /8 to /24 is refused, naming it', () => {
  for (const subnet of ['10.200.0.0/25', 'fd00::/64', '10.200.0.0', 'nonsense']) {
    expect(() => nodeNetworkPlan({ dataDir: '/unused', subnet })).toThrow(subnet);
  }
});

describe('a route already covering part of the subnet', () => {
  const cases: [string, string, boolean][] = [
    ['default', 'eth0', false],
    ['10.200.0.0/16', plan.bridge, false],
    ['10.200.0.0/16', 'hgother', true],
    ['10.200.7.0/24', 'eth1', true],
    ['10.0.0.0/8', 'wg0', true],
    ['10.200.255.255', 'tun0', true],
    ['10.201.0.0/16', 'eth1', false],
    ['192.168.0.0/16', 'eth1', false],
  ];
  test.each(cases)('%s on %s: overlaps %s', (dst, dev, overlaps) => {
    expect(overlappingRoute(plan, [{ dst, dev }]) !== undefined).toBe(overlaps);
  });

  test('local and broadcast entries of the bridge itself do not count', () => {
    expect(overlappingRoute(plan, [{ dst: '10.200.0.1', dev: 'eth9', type: 'local' }])).toBeUndefined();
  });
});
