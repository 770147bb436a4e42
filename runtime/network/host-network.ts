import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fsp from 'node:fs/promises';
import { promisify } from 'node:util';
import { parseCidr, type CidrBlock } from '../../domain/sandbox/ip-address';

const run = promisify(execFile);

/** The node's side of sandbox networking: one bridge, one nftables table, the ports of the node's egress services. */
export interface NodeNetworkPlan {
  /** Bridge device (at most 15 characters). */
  bridge: string;
  /** Name of the nftables tables (inet and bridge families) holding every rule of ours. */
  table: string;
  /** Start of the host-side veth names of this node's sandboxes (at most 7 characters). */
  interfacePrefix: string;
  /** The sandbox subnet, e.g. 10.200.0.0/16, and the bridge's address in it (the sandboxes' gateway). */
  subnet: string;
  prefix: number;
  gateway: string;
  /** Ports on the gateway address: HTTP (port 80 redirected), TLS (443 redirected), the explicit proxy, DNS. */
  ports: { http: number; tls: number; proxy: number; dns: number };
}

/** One sandbox's share: its namespace, the host end of its veth pair, its address. */
export interface SandboxLink {
  netns: string;
  hostInterface: string;
  address: string;
}

async function ip(...args: string[]): Promise<string> {
  return (await run('ip', args)).stdout;
}

async function quietly(operation: Promise<unknown>): Promise<void> {
  await operation.catch(() => undefined);
}

/**
 * The rules of the node, replaced as a whole (a table is deleted and written in one nft
 * transaction, so no moment lacks them). From the sandbox subnet and the bridge, only the gateway's
 * egress ports and DNS are reachable: no other port or address of the node, no forwarding at all
 * (so nothing leaves the node but what the proxy sends itself), and no frame from one sandbox's
 * port of the bridge to another's. TCP 80 and 443 to anywhere are redirected to the proxy; any
 * other packet not addressed to the bridge address is refused as it arrives (before routing, so
 * whether the node forwards packets at all does not matter), and what reaches the bridge address
 * on another port too: at once (a reset, an ICMP error), so a tool fails fast rather than waiting
 * out its timeout.
 */
export function nodeRuleset(plan: NodeNetworkPlan): string {
  const { bridge, table, subnet, prefix, gateway, ports } = plan;
  const net = `${subnet}/${prefix}`;
  return `
table inet ${table}
delete table inet ${table}
table inet ${table} {
  chain prerouting {
    type nat hook prerouting priority dstnat - 10; policy accept;
    iifname "${bridge}" ip saddr ${net} tcp dport 80 redirect to :${ports.http}
    iifname "${bridge}" ip saddr ${net} tcp dport 443 redirect to :${ports.tls}
  }
  chain prerouting_filter {
    type filter hook prerouting priority filter - 10; policy accept;
    iifname "${bridge}" ip daddr != ${gateway} meta l4proto tcp reject with tcp reset
    iifname "${bridge}" ip daddr != ${gateway} reject with icmpx type admin-prohibited
  }
  chain input {
    type filter hook input priority filter - 10; policy accept;
    iifname "${bridge}" ip saddr ${net} ip daddr ${gateway} tcp dport { ${ports.http}, ${ports.tls}, ${ports.proxy} } accept
    iifname "${bridge}" ip saddr ${net} ip daddr ${gateway} udp dport ${ports.dns} accept
    iifname "${bridge}" meta l4proto tcp reject with tcp reset
    iifname "${bridge}" reject with icmpx type admin-prohibited
    iifname != "lo" ip saddr ${net} drop
  }
  chain forward {
    type filter hook forward priority filter - 10; policy accept;
    iifname "${bridge}" reject with icmpx type admin-prohibited
    oifname "${bridge}" drop
    ip saddr ${net} drop
    ip daddr ${net} drop
  }
}
table bridge ${table}
delete table bridge ${table}
table bridge ${table} {
  chain forward {
    type filter hook forward priority filter - 10; policy accept;
    iifname "${plan.interfacePrefix}*" drop
  }
}
`;
}

/**
 * A fixed, locally administered MAC address for the bridge. Left to itself a bridge takes the
 * lowest MAC of its ports, so each sandbox joining could change the gateway's MAC under the
 * others, whose neighbour caches would then point nowhere until they expire.
 */
export function bridgeMac(bridge: string): string {
  const bytes = createHash('sha256').update(`hangar bridge ${bridge}`).digest().subarray(0, 6);
  bytes[0] = (bytes[0] & 0xfc) | 0x02;
  return [...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join(':');
}

/** A route of `ip -j route show` (the fields read here). */
export interface RouteEntry {
  dst: string;
  dev?: string;
  type?: string;
}

/**
 * The route that already covers part of the sandbox subnet through another device, if any: the
 * sandboxes' addresses would then be ambiguous for the node (its replies, its proxy's peers), so
 * the node refuses to start rather than break that network or its own.
 */
export function overlappingRoute(plan: NodeNetworkPlan, routes: readonly RouteEntry[]): RouteEntry | undefined {
  const ours = parseCidr(`${plan.subnet}/${plan.prefix}`) as CidrBlock;
  return routes.find((route) => {
    if (route.dev === plan.bridge || (route.type !== undefined && route.type !== 'unicast')) return false;
    const block = route.dst === 'default' ? undefined : parseCidr(route.dst.includes('/') ? route.dst : `${route.dst}/32`);
    if (!block || 'problem' in block || block.family !== 4) return false;
    const prefix = Math.min(block.prefix, ours.prefix);
    const mask = ((1n << BigInt(prefix)) - 1n) << BigInt(32 - prefix);
    return (block.base & mask) === (ours.base & mask);
  });
}

/** The bridge (idempotent), with its address and MAC, without IPv6, and the node's rules. */
export async function setUpNode(plan: NodeNetworkPlan): Promise<void> {
  const routes = JSON.parse(await ip('-j', '-4', 'route', 'show')) as RouteEntry[];
  const overlap = overlappingRoute(plan, routes);
  if (overlap) {
    throw new Error(
      `the sandbox subnet ${plan.subnet}/${plan.prefix} overlaps the route to ${overlap.dst} on ${overlap.dev ?? 'another device'}: choose another with HANGAR_SANDBOX_SUBNET`,
    );
  }
  const exists = await ip('link', 'show', 'dev', plan.bridge).then(() => true, () => false);
  if (!exists) await ip('link', 'add', plan.bridge, 'type', 'bridge');
  await ip('link', 'set', 'dev', plan.bridge, 'address', bridgeMac(plan.bridge));
  await fsp.writeFile(`/proc/sys/net/ipv6/conf/${plan.bridge}/disable_ipv6`, '1');
  await ip('addr', 'replace', `${plan.gateway}/${plan.prefix}`, 'dev', plan.bridge);
  await ip('link', 'set', plan.bridge, 'up');
  await nft(nodeRuleset(plan));
}

/** Removes the node's bridge and rules (sandboxes' links must be gone first). */
export async function tearDownNode(plan: NodeNetworkPlan): Promise<void> {
  await quietly(nft(`delete table inet ${plan.table}\n`));
  await quietly(nft(`delete table bridge ${plan.table}\n`));
  await quietly(ip('link', 'del', plan.bridge));
}

function nft(ruleset: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile('nft', ['-f', '-'], (err, _stdout, stderr) => (err ? reject(new Error(`nft: ${stderr.trim() || err.message}`)) : resolve()));
    child.stdin?.end(ruleset);
  });
}

/** Runs `command` with `input` on its stdin; rejects with its stderr. */
function runWithInput(command: string, args: string[], input: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, (err, _stdout, stderr) => (err ? reject(new Error(`${command}: ${stderr.trim() || err.message}`)) : resolve()));
    child.stdin?.end(input);
  });
}

/** `ip -batch -` on these commands, one process where each would be one. */
const ipBatch = (commands: string[], args: string[] = []) => runWithInput('ip', [...args, '-batch', '-'], `${commands.join('\n')}\n`);

const pathExists = (file: string) => fsp.access(file).then(() => true, () => false);

/** Whether anything of the sandbox's link is there (a previous attempt's, or a running sandbox's). */
async function linkPresent(link: SandboxLink): Promise<boolean> {
  const found = await Promise.all([pathExists(netnsPath(link.netns)), pathExists(`/sys/class/net/${link.hostInterface}`)]);
  return found.includes(true);
}

/**
 * The sandbox's namespace and veth pair: `eth0` inside with its address and a default route to the
 * gateway, the host end on the bridge as an isolated port (no frames to other isolated ports), and
 * no IPv6 on either end. Loopback is up. Repeating it after a partial attempt starts over.
 * Two `ip -batch` processes, not one per step (each costs milliseconds of the sandbox's start):
 * one on the node's side, one in the namespace (its IPv6 sysctls are written from inside: a
 * process sees the sysctls of its own namespace). The host end generates no IPv6 address
 * (`addrgenmode none`) from before it is up, and has IPv6 disabled right after.
 */
export async function attachSandbox(plan: NodeNetworkPlan, link: SandboxLink): Promise<void> {
  if (await linkPresent(link)) await detachSandbox(link);
  const host = link.hostInterface;
  await ipBatch([
    `netns add ${link.netns}`,
    `link add ${host} type veth peer name eth0 netns ${link.netns}`,
    `link set ${host} addrgenmode none master ${plan.bridge}`,
    `link set ${host} type bridge_slave isolated on learning off`,
    `link set ${host} up`,
  ]);
  await fsp.writeFile(`/proc/sys/net/ipv6/conf/${host}/disable_ipv6`, '1');
  const noIpv6 = ['all', 'default'].map((conf) => `echo 1 > /proc/sys/net/ipv6/conf/${conf}/disable_ipv6`);
  const inside = [`addr add ${link.address}/${plan.prefix} dev eth0`, 'link set lo up', 'link set eth0 up', `route add default via ${plan.gateway}`];
  await runWithInput('nsenter', [`--net=${netnsPath(link.netns)}`, '/bin/sh', '-c', [...noIpv6, 'exec ip -batch -'].join(' && ')], `${inside.join('\n')}\n`);
}

/** Deletes the namespace and both veth ends (either may be gone already), in one process. */
export async function detachSandbox(link: SandboxLink): Promise<void> {
  await quietly(ipBatch([`link del ${link.hostInterface}`, `netns del ${link.netns}`], ['-force']));
}

export const netnsPath = (netns: string) => `/run/netns/${netns}`;
