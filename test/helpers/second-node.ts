import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Pool } from 'pg';
import type { HangarConfig } from '../../domain/config';
import { cidrContains, parseCidr, type CidrBlock } from '../../domain/sandbox/ip-address';
import { repoRoot } from '../../scripts/stack/binaries';
import { loadMasterKey } from '../../store/master-key';
import { getNode } from '../../store/nodes';
import { BwrapRuntime } from '../../runtime/bwrap-runtime';
import { isWarmId } from '../../runtime/warm-pool';
import { shareSuiteImages } from './sandbox-runtime';
import { eventually } from './workers';

/**
 * A second host on this machine: a network namespace of its own, joined to the host by a veth
 * pair on a free /30 of TEST-NET-2 or -3 (not private, so a sandbox's egress policy would let it
 * through were node listeners not refused), running the real node worker
 * (dist/workers/node.js, so `npm run build` first) with its own node id and data folder, and its
 * listener on its own address. The test stack's services listen on 127.0.0.1 of the host, which
 * the namespace does not share: relays on the host end of the veth carry PostgreSQL, Temporal
 * and ClickHouse to them, as those services would listen on a network address between machines.
 */
export interface SecondNode {
  id: string;
  netns: string;
  /** The host's end of the veth (where the relays listen). */
  hostSide: string;
  /** The second host's own address; its listener is there. */
  address: string;
  listenerUrl: string;
  listenPort: number;
  dataDir: string;
  /** Its worker's output, for a failing test to show. */
  log(): string;
  /**
   * The host goes silent: its worker is killed (SIGKILL) and its network cut (the veth down);
   * its sandboxes and data stay, as on a host that died or was cut off.
   */
  crash(): Promise<void>;
  /** The host comes back: its network up and its worker started again (same id and folder), waiting until it reports. */
  restart(): Promise<void>;
  /** Stops its worker (as a crash would: SIGKILL when `kill`), removes its sandboxes, namespace, veth, relays and data folder. */
  stop(options?: { kill?: boolean }): Promise<void>;
}

const LISTEN_PORT = 7443;

/** The warm sandboxes (runtime/warm-pool.ts) in a node's data folder, started or starting. */
export function warmSandboxIds(dataDir: string): string[] {
  const dir = path.join(dataDir, 'sandboxes');
  return fs.existsSync(dir) ? fs.readdirSync(dir).filter(isWarmId).sort() : [];
}
const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();

/** A /30 of TEST-NET-2 or -3 that no route of this machine touches (a test internet, another run's second node); its first address. */
function freeBlock(): string {
  const routes = (JSON.parse(ip('-j', '-4', 'route', 'show')) as { dst: string }[])
    .map((route) => route.dst)
    .filter((dst) => dst !== 'default')
    .map((dst) => parseCidr(dst.includes('/') ? dst : `${dst}/32`))
    .filter((block): block is CidrBlock => block !== undefined && !('problem' in block));
  const candidates = ['198.51.100.', '203.0.113.'].flatMap((prefix) => Array.from({ length: 64 }, (_, i) => `${prefix}${i * 4}`)).sort(() => Math.random() - 0.5);
  const free = candidates.find((first) => {
    const block = parseCidr(`${first}/30`) as CidrBlock;
    return !routes.some((other) => cidrContains(block, { family: 4, value: other.base }) || cidrContains(other, { family: 4, value: block.base }));
  });
  if (free === undefined) throw new Error('every /30 of TEST-NET-2 and -3 is routed: second nodes left behind?');
  return free;
}

/** A TCP relay on `host`:`port` to 127.0.0.1:`port`. */
async function relay(host: string, port: number): Promise<net.Server> {
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}

/** The service ports of the test stack the node worker connects to. */
function servicePorts(config: HangarConfig): number[] {
  return [new URL(config.databaseUrl!).port, config.temporalAddress!.split(':').pop()!, new URL(config.clickhouseUrl!).port].map(Number);
}

/** The node worker's environment: the platform's services through the relays, its own id, folder and listener. */
function workerEnv(config: HangarConfig, node: { id: string; hostSide: string; address: string; dataDir: string }): NodeJS.ProcessEnv {
  const at = (url: string) => Object.assign(new URL(url), { hostname: node.hostSide }).toString();
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    HANGAR_DATA_DIR: node.dataDir,
    HANGAR_NODE_ID: node.id,
    HANGAR_NODE_LISTEN: `${node.address}:${LISTEN_PORT}`,
    HANGAR_MASTER_KEY: loadMasterKey(config).toString('base64'),
    HANGAR_TASK_QUEUE: config.taskQueue,
    HANGAR_REGION: config.region,
    HANGAR_SANDBOX_NETWORK: 'false',
    HANGAR_SANDBOX_WARM_POOL: '0',
    // Its sandboxes' cgroups apart from this host's: a moved revision's instance has the same id on both.
    HANGAR_SANDBOX_CGROUP: `hangar-${node.id}`,
    DATABASE_URL: at(config.databaseUrl!),
    CLICKHOUSE_URL: at(config.clickhouseUrl!),
    CLICKHOUSE_DATABASE: config.clickhouseDatabase,
    TEMPORAL_ADDRESS: `${node.hostSide}:${config.temporalAddress!.split(':').pop()}`,
    TEMPORAL_NAMESPACE: config.temporalNamespace,
  };
}

/** The veth pair and namespace of a second host on the /30 whose first address is `base`. */
function addHost(tag: string, base: string): { netns: string; hostInterface: string; hostSide: string; address: string } {
  const prefix = base.replace(/\d+$/, '');
  const last = Number(base.split('.').pop());
  const hostSide = `${prefix}${last + 1}`;
  const address = `${prefix}${last + 2}`;
  const netns = `hgn-${tag}`;
  const hostInterface = `hgn${tag}`;
  ip('netns', 'add', netns);
  ip('link', 'add', hostInterface, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns);
  ip('addr', 'add', `${hostSide}/30`, 'dev', hostInterface);
  ip('link', 'set', hostInterface, 'up');
  ip('-n', netns, 'addr', 'add', `${address}/30`, 'dev', 'eth0');
  ip('-n', netns, 'link', 'set', 'lo', 'up');
  ip('-n', netns, 'link', 'set', 'eth0', 'up');
  return { netns, hostInterface, hostSide, address };
}

/**
 * Starts the second host and its node worker, and waits until the node has reported itself with
 * its listener. `env`: settings of the worker's own over the defaults (its warm pool, its PATH).
 * The host shares the suite's node image store, where base-image (the default image, which a node
 * worker builds at its start) is built already, unless `ownImages` gives it an empty one.
 */
export async function startSecondNode(config: HangarConfig, pg: Pool, options: { env?: NodeJS.ProcessEnv; ownImages?: boolean } = {}): Promise<SecondNode> {
  const workerFile = path.join(repoRoot(), 'dist/workers/node.js');
  if (!fs.existsSync(workerFile)) throw new Error('dist/workers/node.js is missing: run npm run build first');
  const tag = randomBytes(3).toString('hex');
  const host = addHost(tag, freeBlock());
  const id = `node2-${tag}`;
  // Short: sandbox socket paths (<dataDir>/sandboxes/<uuid>/api/agent.sock) must fit in 107 bytes.
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hn2-'));
  if (!options.ownImages) shareSuiteImages(dataDir);
  const relays: net.Server[] = [];
  let output = '';
  let worker: ChildProcess | undefined;
  const endWorker = async (signal: NodeJS.Signals) => {
    if (!worker || worker.exitCode !== null || worker.signalCode !== null) return;
    const exited = new Promise((resolve) => worker!.once('exit', resolve));
    worker.kill(signal);
    const timer = setTimeout(() => worker!.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  };
  const startWorker = async () => {
    // nsenter enters the network namespace alone: `ip netns exec` would also mount a sysfs of its
    // own over /sys, hiding the cgroup file systems the runtime needs.
    const started = spawn('nsenter', [`--net=/var/run/netns/${host.netns}`, process.execPath, workerFile], { env: { ...workerEnv(config, { id, dataDir, ...host }), ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    worker = started;
    for (const stream of [started.stdout!, started.stderr!]) stream.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)));
    const exited = new Promise<never>((_, reject) => started.once('exit', (code) => reject(new Error(`the node worker exited (${code})`))));
    exited.catch(() => undefined);
    const since = Date.now();
    const reported = async () => {
      const row = await getNode(pg, id);
      return row?.listener_url === node.listenerUrl && row.heartbeat_at.getTime() >= since ? true : undefined;
    };
    await Promise.race([exited, eventually(`node ${id} reporting with its listener`, reported, 60_000)]);
  };
  const node: SecondNode = {
    id,
    netns: host.netns,
    hostSide: host.hostSide,
    address: host.address,
    listenerUrl: `http://${host.address}:${LISTEN_PORT}`,
    listenPort: LISTEN_PORT,
    dataDir,
    log: () => output,
    async crash() {
      await endWorker('SIGKILL');
      ip('link', 'set', host.hostInterface, 'down');
    },
    async restart() {
      ip('link', 'set', host.hostInterface, 'up');
      ip('-n', host.netns, 'link', 'set', 'eth0', 'up');
      await startWorker();
    },
    async stop({ kill = false } = {}) {
      await endWorker(kill ? 'SIGKILL' : 'SIGTERM');
      // Sandboxes are not the worker's children: they outlive it, as on a real node.
      const runtime = new BwrapRuntime({ dataDir, warmPool: 0 });
      for (const sandbox of await runtime.list()) await runtime.remove(sandbox.id).catch(() => undefined);
      // And its warm ones, which a killed worker leaves running.
      for (const id of warmSandboxIds(dataDir)) await runtime.remove(id).catch(() => undefined);
      await runtime.close();
      for (const server of relays) await new Promise((resolve) => server.close(resolve));
      try {
        ip('link', 'del', host.hostInterface);
      } catch {
        // gone with the namespace
      }
      ip('netns', 'del', host.netns);
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  try {
    for (const port of servicePorts(config)) relays.push(await relay(host.hostSide, port));
    await startWorker();
    return node;
  } catch (err) {
    await node.stop({ kill: true }).catch(() => undefined);
    throw new Error(`${(err as Error).message}\nnode worker output:\n${output}`, { cause: err });
  }
}
