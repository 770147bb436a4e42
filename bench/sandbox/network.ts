import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { formatTable } from '../../domain/text-table';
import { BwrapRuntime } from '../../runtime/bwrap-runtime';
import type { RuntimeSandboxSpec } from '../../runtime/sandbox-runtime';
import { repoRoot } from '../../scripts/stack/binaries';
import { exec, sandboxSpec } from '../../test/helpers/sandbox-runtime';
import { startTestInternet, testSandboxNetwork } from '../../test/helpers/test-internet';
import { percentile } from '../common/stats';

/**
 * A sandbox's outbound network (run by hand after a build: `node dist/bench/sandbox/network.js`,
 * as root), against a stand-in internet on this machine (test/helpers/test-internet.ts):
 * - an HTTP download through the sandbox's egress (its transparent proxy) vs the same download
 *   from the node itself (target: at least 0.7 of its throughput), and through a bare Node relay
 *   (pipe(), no policy, no counting) between the same namespaces: the floor any relay in Node
 *   sets here; with the CPU seconds per GB each relay spent (steadier than MB/s on a shared machine);
 * - connection setup, a new connection and a small GET each, the same two ways (target: p50 +1 ms
 *   at most);
 * - create -> first command with a network of its own vs without (target: 1.2x at most);
 * - create and delete time per sandbox as sandboxes (namespaces, veths, rules) accumulate.
 * Options: BENCH_DOWNLOAD_MB (1024), BENCH_CONNECTS (200), BENCH_STARTS (20), BENCH_SCALE (10,100,500).
 */
const DOWNLOAD_MB = Number(process.env.BENCH_DOWNLOAD_MB ?? 1024);
const CONNECTS = Number(process.env.BENCH_CONNECTS ?? 200);
const STARTS = Number(process.env.BENCH_STARTS ?? 20);
const SCALE = (process.env.BENCH_SCALE ?? '10,100,500').split(',').map(Number);
const NAME = 'files.test';
const BARE_RELAY_PORT = 16080;

const log = (line: string) => console.log(line);

type Where = { socketPath: string } | { host: string };

/** Seconds curl took for the download of `url`, run in the sandbox (through its egress) or on the node. */
async function downloadSeconds(where: Where, url: string): Promise<number> {
  // Not through the sandbox's HTTP_PROXY: files.test by the transparent proxy, the bridge address to the bare relay.
  const command = `curl -sS -o /dev/null -w '%{time_total}' -H 'Host: ${NAME}' --noproxy '*' ${url}`;
  const output = 'socketPath' in where ? (await exec(where.socketPath, command, { timeout: 600 })).stdout : execFileSync('sh', ['-c', command]).toString();
  const seconds = Number(output);
  if (!(seconds > 0)) throw new Error(`the download printed ${JSON.stringify(output)}`);
  return seconds;
}

/** A relay moving bytes and nothing else: what a Node relay costs here without policy, counting or buffer reuse. */
const BARE_RELAY = `
const net = require('net');
const [host, port, listenHost, listenPort] = process.argv.slice(1);
net.createServer((client) => {
  const upstream = net.connect(Number(port), host);
  client.pipe(upstream);
  upstream.pipe(client);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
}).listen(Number(listenPort), listenHost, () => console.log('listening'));`;

async function startBareRelay(to: string, gateway: string, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', BARE_RELAY, to, '80', gateway, String(port)], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve, reject) => {
    child.stdout!.once('data', resolve);
    child.once('exit', reject);
  });
  return child;
}

/** CPU seconds (user + system) of a process so far, from /proc. */
function cpuSeconds(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface DownloadFigures {
  mbPerSecond: number[];
  cpuPerGb: number[];
}

/** One download, its MB/s and the CPU seconds per GB `cpu` (a clock of the relay's process) advanced meanwhile. */
async function measureDownload(figures: DownloadFigures, where: Where, url: string, cpu: () => number): Promise<void> {
  const before = cpu();
  figures.mbPerSecond.push(DOWNLOAD_MB / (await downloadSeconds(where, url)));
  figures.cpuPerGb.push(((cpu() - before) * 1024) / DOWNLOAD_MB);
}

/** Downloads, alternated round by round: from the node, through the sandbox's egress, through the bare relay. */
async function measureDownloads(sandbox: { socketPath: string }, host: string, relay: { address: string; pid: number }) {
  const bytes = DOWNLOAD_MB * 1024 * 1024;
  const empty = () => ({ mbPerSecond: [], cpuPerGb: [] });
  const [direct, proxy, bare]: DownloadFigures[] = [empty(), empty(), empty()];
  const ownCpu = () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1e6;
  };
  for (let round = 0; round < 3; round++) {
    await measureDownload(direct, { host }, `http://${host}/bytes/${bytes}`, () => 0);
    // The egress proxy runs in this process (the node worker's place), which does nothing else meanwhile.
    await measureDownload(proxy, sandbox, `http://${NAME}/bytes/${bytes}`, ownCpu);
    await measureDownload(bare, sandbox, `http://${relay.address}/bytes/${bytes}`, () => cpuSeconds(relay.pid));
  }
  return { direct, proxy, bare };
}

/** A program timing `count` GETs, each on a new connection, to `address` with Host files.test; prints the times in ms. */
const CONNECT_PROGRAM = (address: string, count: number) => `
const http = require('http');
(async () => {
  const times = [];
  for (let i = 0; i < ${count}; i++) {
    const began = performance.now();
    await new Promise((resolve, reject) => http.get({ host: '${address}', path: '/x', headers: { host: '${NAME}' }, agent: false }, (res) => res.resume().on('end', resolve)).on('error', reject));
    times.push(performance.now() - began);
  }
  console.log(JSON.stringify(times));
})();`;

async function connectTimes(where: { socketPath: string } | { host: string }, address: string): Promise<number[]> {
  const program = CONNECT_PROGRAM(address, CONNECTS);
  const output = 'socketPath' in where ? (await exec(where.socketPath, `node -e "${program.replace(/"/g, '\\"')}"`, { timeout: 600 })).stdout : execFileSync(process.execPath, ['-e', program]).toString();
  return JSON.parse(output);
}

/** create -> first command answered, in ms; the sandbox removed after. */
async function startOnce(runtime: BwrapRuntime, spec: RuntimeSandboxSpec): Promise<number> {
  const began = performance.now();
  const handle = await runtime.start(spec);
  await exec(handle.socketPath, 'true');
  const ms = performance.now() - began;
  await runtime.remove(spec.id);
  return ms;
}

const p50 = (xs: number[]) => percentile(xs, 50);
const fixed = (x: number, digits = 1) => x.toFixed(digits);

/** Create and delete times (p50 of the 10 around each of SCALE sandboxes present), with sandboxes of `spec` accumulating. */
async function measureScale(runtime: BwrapRuntime, spec: () => RuntimeSandboxSpec): Promise<{ create: number; remove: number }[]> {
  const creates: number[] = [];
  const ids: string[] = [];
  for (let i = 0; i < Math.max(...SCALE); i++) {
    const next = spec();
    const began = performance.now();
    await runtime.start(next);
    creates.push(performance.now() - began);
    ids.push(next.id);
  }
  const deletes: number[] = [];
  for (const id of ids.reverse()) {
    const began = performance.now();
    await runtime.remove(id);
    deletes.push(performance.now() - began);
  }
  // deletes[k] happened with ids.length - k sandboxes present.
  const window = (xs: number[], at: number) => xs.slice(Math.max(0, at - 10), at);
  return SCALE.map((n) => ({ create: p50(window(creates, n)), remove: p50(window(deletes, ids.length - n + 10)) }));
}

/** The scale curve with a network of their own, beside the same without (what accumulating sandboxes cost anyway). */
async function scaleTable(runtime: BwrapRuntime, plain: BwrapRuntime, networked: () => RuntimeSandboxSpec): Promise<string> {
  const withNetwork = await measureScale(runtime, networked);
  const without = await measureScale(plain, () => sandboxSpec({ memoryMb: 128 }));
  const rows = SCALE.map((n, i) => [`${n} sandboxes`, fixed(withNetwork[i].create), fixed(withNetwork[i].remove), fixed(without[i].create), fixed(without[i].remove)]);
  return formatTable(['sandboxes present', 'create p50 ms', 'delete p50 ms', 'no network: create', 'delete'], rows);
}

async function main(): Promise<void> {
  const dataDir = path.join(repoRoot(), '.data-bench', `net-${process.pid}`);
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const internet = await startTestInternet(1);
  const [host] = internet.hosts;
  // A /16 of its own: the scale measure holds hundreds of sandboxes at once.
  const network = testSandboxNetwork(dataDir, () => ({ [NAME]: [host] }), { subnet: '10.250.0.0/16' });
  await network.start();
  const runtime = new BwrapRuntime({ dataDir, network, agentDir: process.env.HANGAR_AGENT_DIR });
  const plain = new BwrapRuntime({ dataDir: `${dataDir}-plain`, agentDir: process.env.HANGAR_AGENT_DIR });
  const networked = () => sandboxSpec({ memoryMb: 128, network: { allowedDomains: [NAME] } });
  try {
    const sandbox = await runtime.start({ ...networked(), memoryMb: 1024 });
    // The bare relay listens on the bridge address, let through by a rule of this run's own table.
    const { gateway, table, bridge } = network.plan;
    execFileSync('nft', ['insert', 'rule', 'inet', table, 'input', 'iifname', bridge, 'ip', 'daddr', gateway, 'tcp', 'dport', String(BARE_RELAY_PORT), 'accept']);
    const relay = await startBareRelay(host, gateway, BARE_RELAY_PORT);
    const downloads = await measureDownloads(sandbox, host, { address: `${gateway}:${BARE_RELAY_PORT}`, pid: relay.pid! }).finally(() => relay.kill());
    const [inside, outside] = [await connectTimes(sandbox, host), await connectTimes({ host }, host)];
    await runtime.remove(sandbox.id);

    const withNetwork: number[] = [];
    const without: number[] = [];
    for (let i = 0; i < STARTS; i++) {
      without.push(await startOnce(plain, sandboxSpec({ memoryMb: 128 })));
      withNetwork.push(await startOnce(runtime, networked()));
    }
    const { direct, proxy, bare } = downloads;
    const mbs = (figures: DownloadFigures) => p50(figures.mbPerSecond);
    const cpu = (figures: DownloadFigures) => fixed(p50(figures.cpuPerGb), 2);
    log(`network benchmark: ${DOWNLOAD_MB} MB downloads (3 each way), ${CONNECTS} connections each way, ${STARTS} starts each way`);
    log(
      formatTable(
        ['measure', 'sandbox p50', 'floor', 'floor p50', 'ratio', 'target'],
        [
          ['HTTP download, MB/s', fixed(mbs(proxy), 0), 'the node itself', fixed(mbs(direct), 0), fixed(mbs(proxy) / mbs(direct), 2), '>= 0.7'],
          ['  the same, MB/s', fixed(mbs(proxy), 0), 'bare Node relay', fixed(mbs(bare), 0), fixed(mbs(proxy) / mbs(bare), 2), ''],
          ['  bare Node relay, MB/s', fixed(mbs(bare), 0), 'the node itself', fixed(mbs(direct), 0), fixed(mbs(bare) / mbs(direct), 2), ''],
          ['  relay CPU s per GB', cpu(proxy), 'bare Node relay', cpu(bare), fixed(p50(proxy.cpuPerGb) / p50(bare.cpuPerGb), 2), ''],
          ['new connection + GET, ms', fixed(p50(inside), 2), 'the node itself', fixed(p50(outside), 2), `+${fixed(p50(inside) - p50(outside), 2)} ms`, '<= +1 ms'],
          ['create -> first command, ms', fixed(p50(withNetwork)), 'no network', fixed(p50(without)), `${fixed(p50(withNetwork) / p50(without), 2)}x`, '<= 1.2x'],
        ],
      ),
    );
    log(await scaleTable(runtime, plain, networked));
  } finally {
    for (const s of await runtime.list()) await runtime.remove(s.id).catch(() => undefined);
    for (const s of await plain.list()) await plain.remove(s.id).catch(() => undefined);
    await runtime.close();
    await plain.close();
    await network.tearDown();
    await internet.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(`${dataDir}-plain`, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
