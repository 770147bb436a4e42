import dgram from 'node:dgram';
import dns from 'node:dns';
import fsp from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { formatIp, parseAllowedPrivateRanges, parseCidr, parseIp, type CidrBlock } from '../../domain/sandbox/ip-address';
import { canonicalName, egressPolicy, hostVerdict, type EgressPolicy, type SandboxNetworkSpec } from '../../domain/sandbox/network-policy';
import { writeFileAtomically } from '../atomic-file';
import { DNS_TYPE_A, RCODE_NXDOMAIN, dnsAnswer, parseDnsQuery } from './dns-answer';
import { handleExplicit, handleTransparent, permittedAddresses, type EgressContext, type EgressRefusal, type NameResolver } from './egress-proxy';
import { attachSandbox, detachSandbox, netnsPath, setUpNode, tearDownNode, type NodeNetworkPlan, type SandboxLink } from './host-network';

export interface SandboxNetworkOptions {
  /** Leases live in `<dataDir>/network/leases/`: they outlive the worker, as the links do. */
  dataDir: string;
  /** The node's private sandbox subnet (HANGAR_SANDBOX_SUBNET); its first address is the bridge's. */
  subnet?: string;
  bridge?: string;
  /** nftables table name (inet and bridge families). */
  table?: string;
  /** Start of the host-side veth names (at most 7 characters; 8 hex digits of the address follow). */
  interfacePrefix?: string;
  ports?: Partial<NodeNetworkPlan['ports']>;
  /** How the node resolves names for sandboxes; the host's resolver (IPv4) by default. */
  resolve?: NameResolver;
  onRefused?: (refusal: EgressRefusal) => void;
  /** Bytes a sandbox's connection carried, as they pass (e.g. TrafficRecorder.record), besides trafficOf's count. */
  onTraffic?: (sandboxId: string, bytesOut: number, bytesIn: number) => void;
  /** Blocks of private ranges sandboxes may reach (HANGAR_SANDBOX_ALLOWED_PRIVATE_RANGES); the rest stay refused. */
  allowedPrivateRanges?: string[];
  /** Addresses of the platform's node listeners (NodeListenerAddresses): refused like the node's own, whatever is opened. */
  nodeListeners?: () => readonly CidrBlock[];
}

/** What a networked sandbox is given: its namespace to run in, and the node's services as it sees them. */
export interface SandboxAttachment {
  netnsPath: string;
  address: string;
  nameserver: string;
  proxyUrl: string;
}

interface Lease {
  sandboxId: string;
  network?: SandboxNetworkSpec;
}

export const DEFAULT_SANDBOX_SUBNET = '10.200.0.0/16';
const DEFAULT_PORTS = { http: 15080, tls: 15443, proxy: 15128, dns: 53 };

/**
 * The node's resolver (its /etc/resolv.conf servers), through c-ares rather than getaddrinfo: a
 * sandbox asking many names must not fill libuv's thread pool, which the worker's file work shares.
 */
function systemResolver(): NameResolver {
  const resolver = new dns.promises.Resolver({ timeout: 3_000, tries: 2 });
  return async (name) => {
    const [addresses, aliases] = await Promise.all([resolver.resolve4(name), cnameChain(resolver, name)]);
    return { addresses, aliases };
  };
}

/** The names `name` is an alias of, in order (c-ares follows them for A records but does not say which). */
async function cnameChain(resolver: dns.promises.Resolver, name: string): Promise<string[]> {
  const chain: string[] = [];
  for (let current = name; chain.length < 8; ) {
    const [target] = await resolver.resolveCname(current).catch(() => [] as string[]);
    if (!target) break;
    chain.push(target);
    current = target;
  }
  return chain;
}

function allowedPrivateBlocks(ranges: string[]): CidrBlock[] {
  const blocks = parseAllowedPrivateRanges(ranges.join(','), 'allowedPrivateRanges');
  if ('problem' in blocks) throw new Error(blocks.problem);
  return blocks;
}

/** The node plan of these options: the subnet parsed, the gateway its first address. */
export function nodeNetworkPlan(options: SandboxNetworkOptions): NodeNetworkPlan & { block: CidrBlock } {
  const subnet = options.subnet ?? DEFAULT_SANDBOX_SUBNET;
  const block = parseCidr(subnet);
  if (!/^[a-z][a-z0-9]{0,6}$/.test(options.interfacePrefix ?? 'hgv')) throw new Error(`the interface prefix must be 1-7 lowercase letters and digits, got '${options.interfacePrefix}'`);
  if (!block || 'problem' in block || block.family !== 4 || block.prefix > 24 || block.prefix < 8) {
    throw new Error(`the sandbox subnet must be an IPv4 CIDR block from /8 to /24, got '${subnet}'`);
  }
  const gateway = formatIp({ family: 4, value: block.base + 1n });
  // Named after the subnet: two installations on one machine (npm start beside npm test, or two
  // test runs) have different subnets, so their bridges and tables never meet.
  const tag = block.base.toString(16).padStart(8, '0');
  return {
    bridge: options.bridge ?? `hg${tag}`,
    table: options.table ?? `hangar_${tag}`,
    interfacePrefix: options.interfacePrefix ?? 'hgv',
    subnet: formatIp({ family: 4, value: block.base }),
    prefix: block.prefix,
    gateway,
    ports: { ...DEFAULT_PORTS, ...options.ports },
    block,
  };
}

/**
 * Outbound network for the node's sandboxes: a namespace and veth pair per sandbox on a node
 * bridge, the node's nftables rules, and the services a sandbox may reach on the bridge address
 * (the egress proxy and the DNS answerer), each deciding by the sandbox's current policy.
 */
export class SandboxNetwork {
  readonly plan: NodeNetworkPlan & { block: CidrBlock };
  private readonly leasesDir: string;
  private readonly byAddress = new Map<string, { sandboxId: string; policy: EgressPolicy }>();
  private readonly addressOf = new Map<string, string>();
  private readonly servers: (net.Server | dgram.Socket)[] = [];
  private readonly connections = new Set<net.Socket>();
  private readonly traffic = new Map<string, { bytesOut: number; bytesIn: number }>();
  private readonly context: EgressContext;
  private readonly resolve: NameResolver;

  constructor(readonly options: SandboxNetworkOptions) {
    this.plan = nodeNetworkPlan(options);
    this.leasesDir = path.join(options.dataDir, 'network', 'leases');
    this.resolve = options.resolve ?? systemResolver();
    this.context = {
      lookup: (source) => this.byAddress.get(source.replace(/^::ffff:/, '')),
      resolve: this.resolve,
      nodeBlocked: () => this.nodeBlocked(),
      allowedPrivate: allowedPrivateBlocks(options.allowedPrivateRanges ?? []),
      onRefused: options.onRefused,
      onTraffic: (sandboxId, bytesOut, bytesIn) => {
        const counts = this.traffic.get(sandboxId) ?? { bytesOut: 0, bytesIn: 0 };
        this.traffic.set(sandboxId, { bytesOut: counts.bytesOut + bytesOut, bytesIn: counts.bytesIn + bytesIn });
        options.onTraffic?.(sandboxId, bytesOut, bytesIn);
      },
    };
  }

  /** Sets up the bridge and rules, reads the leases a previous worker left, and starts the node's egress services. */
  async start(): Promise<void> {
    await setUpNode(this.plan);
    await fsp.mkdir(this.leasesDir, { recursive: true, mode: 0o700 });
    for (const address of await fsp.readdir(this.leasesDir)) {
      if (!parseIp(address)) continue;
      const lease = JSON.parse(await fsp.readFile(path.join(this.leasesDir, address), 'utf8')) as Lease;
      this.remember(address, lease);
    }
    const { gateway, ports } = this.plan;
    await Promise.all([
      this.listen(ports.http, (socket) => void handleTransparent(this.context, socket, 'http')),
      this.listen(ports.tls, (socket) => void handleTransparent(this.context, socket, 'tls')),
      this.listen(ports.proxy, (socket) => void handleExplicit(this.context, socket)),
    ]);
    const udp = dgram.createSocket('udp4');
    udp.on('message', (packet, from) => void this.answerDns(udp, packet, from));
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(ports.dns, gateway, () => resolve());
    });
    this.servers.push(udp);
  }

  private listen(port: number, onConnection: (socket: net.Socket) => void): Promise<void> {
    const server = net.createServer((socket) => {
      this.connections.add(socket);
      socket.on('close', () => this.connections.delete(socket));
      onConnection(socket);
    });
    this.servers.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, this.plan.gateway, () => resolve());
    });
  }

  /** The node's own addresses, the sandbox subnet and every node's listener: never a destination. */
  private nodeBlocked(): CidrBlock[] {
    const own = Object.values(os.networkInterfaces())
      .flat()
      .map((entry) => entry && parseIp(entry.address))
      .filter((address) => address !== undefined && address !== null)
      .map((address) => ({ family: address.family, base: address.value, prefix: address.family === 4 ? 32 : 128 }));
    return [this.plan.block, ...own, ...(this.options.nodeListeners?.() ?? [])];
  }

  /** Answers A queries for names the policy allows with their allowed addresses; refused names NXDOMAIN. */
  private async answerDns(socket: dgram.Socket, packet: Buffer, from: dgram.RemoteInfo): Promise<void> {
    const owner = this.byAddress.get(from.address);
    const question = parseDnsQuery(packet);
    if (!owner || !question) return;
    const name = canonicalName(question.name);
    const verdict = hostVerdict(owner.policy, name);
    if (verdict.allowed && question.type !== DNS_TYPE_A) {
      socket.send(dnsAnswer(question, 0), from.port, from.address);
      return;
    }
    const permitted = verdict.allowed ? await permittedAddresses(this.context, owner.policy, name) : { refused: verdict.rule };
    const usable = 'addresses' in permitted ? permitted.addresses.filter((address) => net.isIPv4(address)) : [];
    if ('refused' in permitted) this.options.onRefused?.({ sandboxId: owner.sandboxId, source: from.address, host: name, rule: permitted.refused });
    socket.send(dnsAnswer(question, usable.length > 0 ? 0 : RCODE_NXDOMAIN, usable), from.port, from.address);
  }

  private remember(address: string, lease: Lease): void {
    this.byAddress.set(address, { sandboxId: lease.sandboxId, policy: egressPolicy(lease.network) });
    this.addressOf.set(lease.sandboxId, address);
  }

  private link(address: string): SandboxLink {
    const hex = (parseIp(address)!.value).toString(16).padStart(8, '0');
    return { netns: `hangar-${hex}`, hostInterface: `${this.plan.interfacePrefix}${hex}`, address };
  }

  /** A free address of the subnet, taken by creating its lease file (exclusive: two starts never share one). */
  private async lease(lease: Lease): Promise<string> {
    const { block } = this.plan;
    const size = 1n << BigInt(32 - block.prefix);
    for (let offset = 2n; offset < size - 1n; offset++) {
      const address = formatIp({ family: 4, value: block.base + offset });
      if (this.byAddress.has(address)) continue;
      try {
        await fsp.writeFile(path.join(this.leasesDir, address), JSON.stringify(lease), { flag: 'wx', mode: 0o600 });
        return address;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
    throw new Error(`the sandbox subnet ${this.plan.subnet}/${block.prefix} has no free address`);
  }

  /** Gives the sandbox its namespace and address (again, if it had one: a restart), with this policy. */
  async attach(sandboxId: string, network: SandboxNetworkSpec | undefined): Promise<SandboxAttachment> {
    const { attachment, linked } = await this.beginAttach(sandboxId, network);
    await linked;
    return attachment;
  }

  /**
   * attach() in two steps, so a sandbox's start can go on while its namespace is made: the
   * address is leased (and the attachment known) when this resolves; `linked` settles when the
   * namespace and veth pair are ready to enter. A failed link is detached before `linked` rejects.
   */
  async beginAttach(sandboxId: string, network: SandboxNetworkSpec | undefined): Promise<{ attachment: SandboxAttachment; linked: Promise<void> }> {
    const lease: Lease = { sandboxId, network };
    let address = this.addressOf.get(sandboxId);
    if (address) await writeFileAtomically(path.join(this.leasesDir, address), JSON.stringify(lease), 0o600);
    else address = await this.lease(lease);
    this.remember(address, lease);
    const link = this.link(address);
    const linked = attachSandbox(this.plan, link).catch(async (err) => {
      await this.detach(sandboxId);
      throw err;
    });
    // Not left unhandled if the caller fails before it waits for it.
    linked.catch(() => undefined);
    const { gateway, ports } = this.plan;
    return { attachment: { netnsPath: netnsPath(link.netns), address, nameserver: gateway, proxyUrl: `http://${gateway}:${ports.proxy}` }, linked };
  }

  /** The sandbox's policy from the next connection and name lookup on; false when it has no network here. */
  async setPolicy(sandboxId: string, network: SandboxNetworkSpec | undefined): Promise<boolean> {
    const address = this.addressOf.get(sandboxId);
    if (!address) return false;
    const lease: Lease = { sandboxId, network };
    await writeFileAtomically(path.join(this.leasesDir, address), JSON.stringify(lease), 0o600);
    this.remember(address, lease);
    return true;
  }

  /**
   * Bytes the sandbox's connections through the egress proxy carried out and in, since this
   * worker started serving it (the proxy's view: payload, not packets; DNS not counted).
   */
  trafficOf(sandboxId: string): { bytesOut: number; bytesIn: number } {
    return this.traffic.get(sandboxId) ?? { bytesOut: 0, bytesIn: 0 };
  }

  /** Gives a (warm) sandbox's namespace and address to the sandbox taking it over, with that sandbox's policy. */
  async handOver(fromId: string, toId: string, network: SandboxNetworkSpec | undefined): Promise<void> {
    const address = this.addressOf.get(fromId);
    if (!address) throw new Error(`sandbox ${fromId} has no network on this node`);
    const lease: Lease = { sandboxId: toId, network };
    await writeFileAtomically(path.join(this.leasesDir, address), JSON.stringify(lease), 0o600);
    this.addressOf.delete(fromId);
    this.remember(address, lease);
  }

  /** Removes the sandbox's namespace, interfaces and lease (nothing when it has none). */
  async detach(sandboxId: string): Promise<void> {
    const address = this.addressOf.get(sandboxId);
    if (!address) return;
    await detachSandbox(this.link(address));
    this.traffic.delete(sandboxId);
    this.byAddress.delete(address);
    this.addressOf.delete(sandboxId);
    await fsp.rm(path.join(this.leasesDir, address), { force: true });
  }

  /** Stops the node's egress services and ends their connections; sandboxes' links stay (a new worker serves them again). */
  async close(): Promise<void> {
    for (const socket of this.connections) socket.destroy();
    await Promise.all(this.servers.splice(0).map((server) => new Promise<void>((resolve) => (server instanceof net.Server ? server.close(() => resolve()) : server.close(() => resolve())))));
  }

  /** Everything gone: services, every sandbox's links and leases, the bridge and the rules. */
  async tearDown(): Promise<void> {
    await this.close();
    for (const sandboxId of [...this.addressOf.keys()]) await this.detach(sandboxId);
    await tearDownNode(this.plan);
  }
}
