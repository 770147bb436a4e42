import { execFileSync } from 'node:child_process';
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
 *   from the node itself (target: at least 0.7 of its throughput);
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

const log = (line: string) => console.log(line);

/** Seconds curl took for the download, run in the sandbox (by name, through its egress) or on the node (by address). */
async function downloadSeconds(where: { socketPath: string } | { host: string }, bytes: number): Promise<number> {
  const target = 'socketPath' in where ? `http://${NAME}/bytes/${bytes}` : `http://${where.host}/bytes/${bytes}`;
  const command = `curl -sS -o /dev/null -w '%{time_total}' ${target}`;
  const output = 'socketPath' in where ? (await exec(where.socketPath, command, { timeout: 600 })).stdout : execFileSync('sh', ['-c', command]).toString();
  const seconds = Number(output);
  if (!(seconds > 0)) throw new Error(`the download printed ${JSON.stringify(output)}`);
  return seconds;
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

async function measureScale(runtime: BwrapRuntime, spec: () => RuntimeSandboxSpec): Promise<string[][]> {
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
  return SCALE.map((n) => {
    const window = (xs: number[], at: number) => xs.slice(Math.max(0, at - 10), at);
    return [`${n} sandboxes`, fixed(p50(window(creates, n))), fixed(p50(window(deletes, ids.length - n + 10)))];
  });
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
    const bytes = DOWNLOAD_MB * 1024 * 1024;
    const through: number[] = [];
    const direct: number[] = [];
    for (let round = 0; round < 3; round++) {
      direct.push(DOWNLOAD_MB / (await downloadSeconds({ host }, bytes)));
      through.push(DOWNLOAD_MB / (await downloadSeconds(sandbox, bytes)));
    }
    const [inside, outside] = [await connectTimes(sandbox, host), await connectTimes({ host }, host)];
    await runtime.remove(sandbox.id);

    const withNetwork: number[] = [];
    const without: number[] = [];
    for (let i = 0; i < STARTS; i++) {
      without.push(await startOnce(plain, sandboxSpec({ memoryMb: 128 })));
      withNetwork.push(await startOnce(runtime, networked()));
    }
    log(`network benchmark: ${DOWNLOAD_MB} MB downloads (3 each way), ${CONNECTS} connections each way, ${STARTS} starts each way`);
    log(
      formatTable(
        ['measure', 'sandbox p50', 'floor', 'floor p50', 'ratio', 'target'],
        [
          ['HTTP download, MB/s', fixed(p50(through), 0), 'the node itself', fixed(p50(direct), 0), fixed(p50(through) / p50(direct), 2), '>= 0.7'],
          ['new connection + GET, ms', fixed(p50(inside), 2), 'the node itself', fixed(p50(outside), 2), `+${fixed(p50(inside) - p50(outside), 2)} ms`, '<= +1 ms'],
          ['create -> first command, ms', fixed(p50(withNetwork)), 'no network', fixed(p50(without)), `${fixed(p50(withNetwork) / p50(without), 2)}x`, '<= 1.2x'],
        ],
      ),
    );
    log(formatTable(['sandboxes present', 'create p50 ms', 'delete p50 ms'], await measureScale(runtime, networked)));
  } finally {
    for (const s of await runtime.list()) await runtime.remove(s.id).catch(() => undefined);
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
