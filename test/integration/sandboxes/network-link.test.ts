import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { attachSandbox, detachSandbox, netnsPath, type SandboxLink } from '../../../runtime/network/host-network';
import type { SandboxNetwork } from '../../../runtime/network/sandbox-network';
import { SandboxSpecError } from '../../../runtime/sandbox-runtime';
import { runtimeDataDir, sandboxSpec, testRuntime } from '../../helpers/sandbox-runtime';
import { testSandboxNetwork } from '../../helpers/test-internet';

jest.setTimeout(60_000);

// A sandbox's namespace and veth pair as host-network.ts makes them (in two `ip -batch`
// processes), checked with the kernel's own tools: what they hold, that a leftover of a partial
// attempt is started over, and that a start failing while its namespace is made leaves nothing.
const dataDir = runtimeDataDir('network-link');
let network: SandboxNetwork;

beforeAll(async () => {
  network = testSandboxNetwork(dataDir, () => ({}));
  await network.start();
});

afterAll(async () => {
  await network?.tearDown();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
const inside = (link: SandboxLink, command: string) => execFileSync('nsenter', [`--net=${netnsPath(link.netns)}`, 'sh', '-c', command]).toString().trim();
const hostSysctl = (name: string) => fs.readFileSync(`/proc/sys/net/ipv6/conf/${name}/disable_ipv6`, 'utf8').trim();

function testLink(last: number): SandboxLink {
  const hex = `ff${last.toString(16).padStart(6, '0')}`;
  const { subnet } = network.plan;
  return { netns: `hangar-t${hex}`, hostInterface: `${network.plan.interfacePrefix}${hex}`.slice(0, 15), address: subnet.replace(/\.0$/, `.${last}`) };
}

function expectNothingOf(link: SandboxLink): void {
  expect(ip('netns', 'list')).not.toContain(link.netns);
  expect(ip('-o', 'link')).not.toContain(link.hostInterface);
}

function expectAttached(link: SandboxLink): void {
  const { prefix, gateway, bridge } = network.plan;
  expect(inside(link, 'ip -o -4 addr show dev eth0')).toContain(`inet ${link.address}/${prefix}`);
  expect(inside(link, 'ip route show default')).toContain(`default via ${gateway} dev eth0`);
  expect(inside(link, 'ip -o link show dev lo')).toMatch(/[<,]UP[,>]/);
  // No IPv6 in the namespace (eth0 included) nor on the host end, not even a link-local address.
  expect(inside(link, 'cat /proc/sys/net/ipv6/conf/all/disable_ipv6 /proc/sys/net/ipv6/conf/default/disable_ipv6 /proc/sys/net/ipv6/conf/eth0/disable_ipv6')).toBe('1\n1\n1');
  expect(inside(link, 'ip -6 -o addr')).toBe('');
  expect(hostSysctl(link.hostInterface)).toBe('1');
  expect(ip('-6', '-o', 'addr', 'show', 'dev', link.hostInterface)).toBe('');
  const details = ip('-d', 'link', 'show', 'dev', link.hostInterface);
  expect(details).toContain(`master ${bridge}`);
  expect(details).toMatch(/[<,]UP[,>]/);
  expect(details).toMatch(/learning off/);
  expect(details).toMatch(/isolated on/);
}

test('attach makes the namespace, address, route and an isolated bridge port without IPv6; detach leaves nothing', async () => {
  const link = testLink(201);
  await attachSandbox(network.plan, link);
  expectAttached(link);
  await detachSandbox(link);
  expectNothingOf(link);
  // Detaching what is gone already is fine.
  await detachSandbox(link);
});

test('attach over what a partial attempt left (a namespace, a veth half made) starts over', async () => {
  const half = testLink(202);
  ip('netns', 'add', half.netns);
  ip('link', 'add', half.hostInterface, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', half.netns);
  await attachSandbox(network.plan, half);
  expectAttached(half);

  // Only the namespace left (its veth already deleted), and an attach repeated on a complete one.
  const bare = testLink(203);
  ip('netns', 'add', bare.netns);
  await attachSandbox(network.plan, bare);
  expectAttached(bare);
  await attachSandbox(network.plan, bare);
  expectAttached(bare);
  for (const link of [half, bare]) {
    await detachSandbox(link);
    expectNothingOf(link);
  }
});

test('a start that fails while its namespace is being made leaves no namespace, interface or lease', async () => {
  const runtime = testRuntime(dataDir, { network });
  try {
    const before = fs.readdirSync(path.join(dataDir, 'network', 'leases'));
    const spec = sandboxSpec({ seedSnapshotId: 'snap-not-on-this-node' });
    // The snapshot is found missing after the address is leased and the namespace begun.
    await expect(runtime.start(spec)).rejects.toBeInstanceOf(SandboxSpecError);
    expect(fs.readdirSync(path.join(dataDir, 'network', 'leases'))).toEqual(before);
    // This file's sandboxes are in a /24: their namespaces are hangar-<its first 6 hex digits>..
    const subnetHex = network.plan.subnet.split('.').slice(0, 3).map((part) => Number(part).toString(16).padStart(2, '0')).join('');
    expect(ip('netns', 'list')).not.toContain(`hangar-${subnetHex}`);
    expect(ip('-o', 'link')).not.toMatch(new RegExp(`${network.plan.interfacePrefix}[0-9a-f]{8}`));
  } finally {
    await runtime.close();
  }
});
