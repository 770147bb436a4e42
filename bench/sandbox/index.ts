import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { BwrapRuntime } from '../../runtime/bwrap-runtime';
import type { RuntimeSandboxSpec } from '../../runtime/sandbox-runtime';
import { repoRoot } from '../../scripts/stack/binaries';

/**
 * Sandbox benchmark (run by hand after a build: `node dist/bench/sandbox/index.js`, as root).
 *
 * Prints p50/p95 of: create until the first POST /process succeeds; POST /process `true` with
 * waitForCompletion; freeze -> thaw -> first successful request (resume); port detection delay;
 * and memory per idle sandbox with many alive. Each beside its floor measured in the same run,
 * with the ratio. Data under .data-bench/sandbox (removed at the end).
 * Options (environment): BENCH_RUNS (30), BENCH_IDLE_SANDBOXES (100), HANGAR_AGENT_DIR (the
 * compiled agent, default dist/sandbox-agent).
 */
const env = process.env;
const RUNS = Number(env.BENCH_RUNS ?? 30);
const IDLE = Number(env.BENCH_IDLE_SANDBOXES ?? 100);
const dataDir = path.join(repoRoot(), '.data-bench', `sandbox-${process.pid}`);

const log = (line: string) => process.stdout.write(`${line}\n`);

interface Row {
  what: string;
  unit: string;
  samples: number[];
  floorName: string;
  floor: number[];
  target?: string;
}

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)];
}

function since(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

function request(socketPath: string, method: string, url: string, body?: unknown): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({ socketPath, method, path: url, headers: payload ? { 'content-type': 'application/json' } : {} }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const run = (file: string, args: string[]) =>
  new Promise<void>((resolve, reject) => execFile(file, args, (err) => (err ? reject(err) : resolve())));

let counter = 0;
const spec = (image = 'base'): RuntimeSandboxSpec => ({ id: `bench-${process.pid}-${++counter}`, workspaceId: 'bench', image, memoryMb: 512, envs: [], volumes: [] });

async function timed(times: number, work: () => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const start = process.hrtime.bigint();
    await work();
    samples.push(since(start));
  }
  return samples;
}

/** The cheapest possible sandbox: new namespaces, /usr, nothing else. */
const bareBwrap = () =>
  run('bwrap', ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net', '--ro-bind', '/usr', '/usr', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64', '--proc', '/proc', '--dev', '/dev', '/usr/bin/true']);

async function createToFirstProcess(runtime: BwrapRuntime, image?: string): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    // With a warm pool, each create finds a warm sandbox (refilling is not what is measured).
    while (runtime.warmPoolStatus().starting > 0) await new Promise((r) => setTimeout(r, 5));
    const s = spec(image);
    const start = process.hrtime.bigint();
    const handle = await runtime.start(s);
    const reply = await request(handle.socketPath, 'POST', '/process', { command: 'true', waitForCompletion: true });
    samples.push(since(start));
    if (reply.status !== 200) throw new Error(`POST /process answered ${reply.status}`);
    await runtime.remove(s.id);
  }
  return samples;
}

async function resume(runtime: BwrapRuntime, socketPath: string, id: string): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    await runtime.freeze(id);
    const start = process.hrtime.bigint();
    await runtime.thaw(id);
    const reply = await request(socketPath, 'GET', '/health');
    samples.push(since(start));
    if (reply.status !== 200) throw new Error(`health after thaw answered ${reply.status}`);
  }
  return samples;
}

/** From a process's listen() (its own clock) to the event in the log (seen by the host). */
async function portDetection(runtime: BwrapRuntime, socketPath: string, id: string): Promise<number[]> {
  const eventLog = runtime.layout(id).eventLog;
  const samples: number[] = [];
  for (let i = 0; i < Math.min(RUNS, 20); i++) {
    const port = 9000 + i;
    const script = `const s=require('net').createServer();setTimeout(()=>s.listen(${port},'127.0.0.1',()=>console.log(Date.now())),150);setTimeout(()=>{},60000)`;
    const proc = await request(socketPath, 'POST', '/process', { command: `exec node -e "${script}"`, name: `listener-${i}` });
    const before = fs.existsSync(eventLog) ? fs.readFileSync(eventLog, 'utf8').length : 0;
    await request(socketPath, 'POST', `/network/process/${proc.json.pid}/monitor`, { callback: 'http://127.0.0.1:9/bench' });
    let seenAt = 0;
    while (!seenAt) {
      const text = fs.existsSync(eventLog) ? fs.readFileSync(eventLog, 'utf8').slice(before) : '';
      if (text.includes(`"port":${port}`)) seenAt = Date.now();
      else await new Promise((r) => setTimeout(r, 2));
    }
    const logs = await request(socketPath, 'GET', `/process/listener-${i}/logs`);
    samples.push(seenAt - Number(logs.json.stdout.trim()));
    await request(socketPath, 'DELETE', `/process/listener-${i}/kill`);
  }
  return samples;
}

/** Proportional set size (shared pages split between their users) of processes, in MB. */
function pssMb(pids: number[]): number {
  let kb = 0;
  for (const pid of pids) {
    try {
      const match = /^Pss:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
      kb += match ? Number(match[1]) : 0;
    } catch {
      // Exited.
    }
  }
  return kb / 1024;
}

async function idleMemory(runtime: BwrapRuntime): Promise<{ pss: number[]; charged: number[]; floor: number[]; alive: number }> {
  const ids: string[] = [];
  for (let i = 0; i < IDLE; i += 4) {
    const batch = Array.from({ length: Math.min(4, IDLE - i) }, () => spec());
    await Promise.all(batch.map((s) => runtime.start(s)));
    ids.push(...batch.map((s) => s.id));
  }
  // Let each agent settle (lazy allocations, first GC) before measuring.
  await new Promise((r) => setTimeout(r, 2_000));
  const statuses = await runtime.list();
  const alive = statuses.filter((s) => ids.includes(s.id) && s.state === 'running');
  const pss = await Promise.all(alive.map(async (s) => pssMb(await runtime.pids(s.id))));
  const charged = alive.map((s) => (s.memoryUsageBytes ?? 0) / 1024 / 1024);
  // Floor: one idle Node process doing nothing, measured the same way.
  const floor: number[] = [];
  for (let i = 0; i < 5; i++) {
    const idle = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    await new Promise((r) => setTimeout(r, 500));
    floor.push(pssMb([idle.pid!]));
    idle.kill('SIGKILL');
  }
  for (const id of ids) await runtime.remove(id);
  return { pss, charged, floor, alive: alive.length };
}

function print(rows: Row[]): void {
  const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(2));
  log('');
  log(`${'measure'.padEnd(52)} ${'p50'.padStart(8)} ${'p95'.padStart(8)}  ${'floor'.padEnd(30)} ${'p50'.padStart(8)} ${'ratio'.padStart(7)}  target`);
  for (const row of rows) {
    const p50 = percentile(row.samples, 0.5);
    const floor = percentile(row.floor, 0.5);
    log(
      `${`${row.what} (${row.unit})`.padEnd(52)} ${fmt(p50).padStart(8)} ${fmt(percentile(row.samples, 0.95)).padStart(8)}  ${row.floorName.padEnd(30)} ${fmt(floor).padStart(8)} ${`${(p50 / floor).toFixed(1)}x`.padStart(7)}  ${row.target ?? ''}`,
    );
  }
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('the sandbox benchmark runs as root (bubblewrap and cgroups)');
  const runtime = new BwrapRuntime({ dataDir, agentDir: env.HANGAR_AGENT_DIR });
  const rows: Row[] = [];
  try {
    log(`sandbox benchmark: ${RUNS} runs per measure, ${IDLE} idle sandboxes, data in ${dataDir}`);
    // Warm the image, the page cache and the agent's files once, outside the timings.
    const warm = spec();
    await runtime.start(warm);
    await runtime.remove(warm.id);

    const bwrapFloor = await timed(RUNS, bareBwrap);
    const execFloor = await timed(RUNS * 4, () => run('/usr/bin/true', []));
    rows.push({ what: 'create (cold) -> first POST /process ok', unit: 'ms', samples: await createToFirstProcess(runtime), floorName: 'bare `bwrap ... true` spawn', floor: bwrapFloor, target: 'p50 <= 150 ms' });
    // Warm sandboxes run on base-image, the default image: the node builds it first (not timed).
    const pooled = new BwrapRuntime({ dataDir, agentDir: env.HANGAR_AGENT_DIR, warmPool: 1 });
    await pooled.ensureBaseImage();
    await pooled.prewarm();
    try {
      rows.push({ what: 'create (warm pool, base-image) -> first POST /process ok', unit: 'ms', samples: await createToFirstProcess(pooled, 'base-image'), floorName: 'bare `bwrap ... true` spawn', floor: bwrapFloor, target: 'p50 <= 150 ms' });
      if (pooled.warmPoolStatus().lastError) log(`warm pool error: ${pooled.warmPoolStatus().lastError}`);
    } finally {
      await pooled.close();
    }

    const s = spec();
    const handle = await runtime.start(s);
    rows.push({
      what: 'POST /process `true`, waitForCompletion',
      unit: 'ms',
      samples: await timed(RUNS * 4, () => request(handle.socketPath, 'POST', '/process', { command: 'true', waitForCompletion: true })),
      floorName: 'bare child_process exec `true`',
      floor: execFloor,
      target: 'p50 <= 10 ms',
    });
    const healthFloor = await timed(RUNS, () => request(handle.socketPath, 'GET', '/health'));
    rows.push({ what: 'resume: thaw -> first request ok', unit: 'ms', samples: await resume(runtime, handle.socketPath, s.id), floorName: 'GET /health, running sandbox', floor: healthFloor, target: 'p50 <= 25 ms' });
    rows.push({ what: 'port detection: listen -> event logged', unit: 'ms', samples: await portDetection(runtime, handle.socketPath, s.id), floorName: 'bare child_process exec `true`', floor: execFloor, target: 'within 250 ms' });
    await runtime.remove(s.id);

    const memory = await idleMemory(runtime);
    log(`idle sandboxes alive at once: ${memory.alive} of ${IDLE}`);
    rows.push({ what: `memory per idle sandbox, PSS, ${memory.alive} alive`, unit: 'MB', samples: memory.pss, floorName: 'idle bare `node` process, PSS', floor: memory.floor, target: `${IDLE} fit` });
    rows.push({ what: `memory per idle sandbox, cgroup charge`, unit: 'MB', samples: memory.charged, floorName: 'idle bare `node` process, PSS', floor: memory.floor });
    print(rows);
  } finally {
    for (const sandbox of await runtime.list()) await runtime.remove(sandbox.id);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(`sandbox benchmark failed: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
