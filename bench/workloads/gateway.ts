import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pool } from 'pg';
import { createPool } from '../../store/postgres-pool';
import { deployFolder } from '../../cli/deploy';
import { loadConfig } from '../../domain/config';
import { workloadPort, type WorkloadSpec } from '../../domain/workloads/workload';
import { BwrapRuntime } from '../../runtime/bwrap-runtime';
import { apiHealthy, platformEnv, PLATFORM_PROCESSES } from '../../scripts/platform-processes';
import { prepare } from '../../scripts/prepare';
import type { Stack } from '../../scripts/stack';
import { repoRoot } from '../../scripts/stack/binaries';
import { waitUntilReady } from '../../scripts/stack/readiness';
import { superviseChild, type SupervisedChild } from '../../scripts/supervised-child';
import { machineBusyMs, processCpuMs } from '../common/cpu';
import { LoadProcess, measureLoads, type CpuMeter, type LoadFigures, type LoadTarget } from '../common/load-process';
import { benchEnv } from '../common/platform';
import { configOnStack } from '../common/stack';
import { formatTable } from '../../domain/text-table';

/**
 * Inference gateway benchmark (after a build, as root: `node dist/bench/workloads/gateway.js`).
 *
 * Runs the platform as `npm start` does, each part in its own process: the API process (base_url,
 * run_url and sandbox gateway listeners), the control worker and the node worker. Deploys
 * examples/agent (the echo agent, in its sandbox) and puts the same POST under closed-loop load
 * from load generators that are processes of their own, over keep-alive connections:
 *
 * - gateway: run_url, `/{workspace}/agents/{name}` (credential check, route lookup, streaming
 *   proxy to the revision's socket);
 * - gateway by custom domain: the same agent through run_url by a custom domain's Host (a domain
 *   lookup as well);
 * - node:http proxy: a bare Node HTTP server that streams to the revision's socket with the
 *   gateway's proxy code (bare-proxy.ts, no framework, credential or route), the floor of one
 *   HTTP hop in Node;
 * - direct: the revision's socket itself, where the gateway sends upstream (the sandbox agent's
 *   port forwarder, then the agent's port), so the ratio is the gateway's own cost;
 * - agent port: the agent's TCP port from inside the sandbox's network namespace (`nsenter`),
 *   no forwarder: the floor under both.
 *
 * Each concurrency point runs them in interleaved rounds (warm-up excluded) and prints
 * throughput, p50, p99, the ratios to direct, and the CPU time per request of the load generator,
 * the API process, the bare proxy, the sandbox (forwarder and agent) and the rest of the machine
 * (the other platform processes, the kernel, whatever else runs): on a CPU-bound machine,
 * throughput follows the CPU time of the whole chain. Targets: gateway throughput >= 0.8 of direct, p50
 * overhead <= 1 ms. Options: BENCH_CONCURRENCY (comma-separated points, "1,16"),
 * BENCH_SECONDS (timed seconds per path and point, 3), BENCH_WARMUP_SECONDS (1), BENCH_ROUNDS (3),
 * BENCH_LOG_LEVEL (the platform's log level, 'info' as `npm start`; lines go to a file),
 * BENCH_PROFILE=<dir> (CPU profile of the API process), BENCH_PORT_BASE (41000), BENCH_DATA_DIR.
 * Writes bench/results/gateway.json.
 */
const env = process.env;
const POINTS = (env.BENCH_CONCURRENCY ?? '1,16').split(',').map((value) => positive('BENCH_CONCURRENCY', value));
const SECONDS = Number(env.BENCH_SECONDS ?? 3);
const WARMUP_SECONDS = Number(env.BENCH_WARMUP_SECONDS ?? 1);
const ROUNDS = positive('BENCH_ROUNDS', env.BENCH_ROUNDS ?? '3');
const PORT_BASE = positive('BENCH_PORT_BASE', env.BENCH_PORT_BASE ?? '41000');
const LOG_LEVEL = env.BENCH_LOG_LEVEL ?? 'info';
const BODY = '{"inputs":"hello"}';

function positive(name: string, text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must hold positive integers, got '${text}'`);
  return value;
}

const log = (line: string) => process.stdout.write(`${line}\n`);

/** Creates a custom domain and waits until it routes. */
async function createCustomDomain(baseUrl: string, credentials: { apiKey: string; workspace: string }, body: object): Promise<void> {
  const headers = { authorization: `Bearer ${credentials.apiKey}`, 'x-service-workspace': credentials.workspace, 'content-type': 'application/json' };
  const created = await fetch(`${baseUrl}/v0/customdomains`, { method: 'POST', headers, body: JSON.stringify(body) });
  if (created.status !== 200) throw new Error(`creating the custom domain failed (${created.status}): ${await created.text()}`);
  const { metadata } = (await created.json()) as { metadata: { name: string } };
  for (let attempt = 0; attempt < 300; attempt++) {
    const current = (await (await fetch(`${baseUrl}/v0/customdomains/${metadata.name}`, { headers })).json()) as { status: string };
    if (current.status === 'DEPLOYED') return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the custom domain did not become DEPLOYED');
}

interface Run {
  stack?: Stack;
  processes: SupervisedChild[];
  bareProxy?: ChildProcess;
  loads: LoadProcess[];
  pg?: Pool;
  runtime?: BwrapRuntime;
}

/** The platform processes, as `npm start` runs them; their output goes to a file in the data folder. */
function startPlatform(run: Run, childEnv: NodeJS.ProcessEnv, dataDir: string): void {
  const out = fs.createWriteStream(path.join(dataDir, 'bench-platform.log'), { flags: 'w' });
  for (const { name, script } of PLATFORM_PROCESSES) {
    const profile = name === 'api' && env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(env.BENCH_PROFILE)}`] : [];
    run.processes.push(
      superviseChild({
        name,
        argv: [process.execPath, ...profile, path.join(repoRoot(), script)],
        env: childEnv,
        cwd: repoRoot(),
        output: (line) => out.write(`${line}\n`),
        log,
      }),
    );
  }
}

/** A host pid inside the sandbox's network namespace (bubblewrap's outermost process stays outside it). */
async function pidInSandboxNetwork(runtime: BwrapRuntime, sandboxId: string): Promise<number> {
  const host = fs.readlinkSync('/proc/self/ns/net');
  for (const pid of await runtime.pids(sandboxId)) {
    try {
      if (fs.readlinkSync(`/proc/${pid}/ns/net`) !== host) return pid;
    } catch {
      // Gone meanwhile.
    }
  }
  throw new Error(`no process of sandbox ${sandboxId} is in a network namespace of its own`);
}

const ms = (value: number) => value.toFixed(2);

const CPU_PARTS = ['load generator', 'API process', 'bare proxy', 'sandbox'] as const;

/** bare-proxy.ts in its own process, streaming to `socketPath`; resolves with its port. */
function startBareProxy(run: Run, socketPath: string): Promise<number> {
  const child = fork(path.join(__dirname, 'bare-proxy.js'), [socketPath], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  run.bareProxy = child;
  return new Promise((resolve, reject) => {
    child.once('message', (message) => resolve((message as { port: number }).port));
    child.once('exit', (code, signal) => reject(new Error(`the bare proxy exited (${signal ?? code}) before it listened`)));
  });
}

function report(concurrency: number, figures: Map<string, LoadFigures>) {
  const gateway = figures.get('gateway')!;
  const direct = figures.get('direct')!;
  log('');
  log(`concurrency ${concurrency} (CPU: ms per request; cores: machine busy during the path's slices, of ${os.cpus().length}):`);
  log(
    formatTable(
      ['path', 'req/s', 'p50 ms', 'p99 ms', ...CPU_PARTS.map((part) => `CPU ${part}`), 'CPU rest', 'cores'],
      [...figures].map(([label, f]) => {
        const cpu = f.cpuMsPerRequest;
        const rest = cpu.machine - CPU_PARTS.reduce((sum, part) => sum + cpu[part], 0);
        return [label, f.throughputPerSecond.toFixed(0), ms(f.p50Ms), ms(f.p99Ms), ...CPU_PARTS.map((part) => cpu[part].toFixed(3)), rest.toFixed(3), ((cpu.machine * f.throughputPerSecond) / 1000).toFixed(2)];
      }),
    ),
  );
  const versus = (figure: LoadFigures) => ({
    throughputRatio: figure.throughputPerSecond / direct.throughputPerSecond,
    p50OverheadMs: figure.p50Ms - direct.p50Ms,
    p99OverheadMs: figure.p99Ms - direct.p99Ms,
  });
  const comparison = versus(gateway);
  const floor = versus(figures.get('node:http proxy')!);
  log(
    `gateway/direct: throughput ${comparison.throughputRatio.toFixed(2)} (target >= 0.8), p50 +${ms(comparison.p50OverheadMs)} ms (target <= 1 ms), p99 +${ms(comparison.p99OverheadMs)} ms`,
  );
  log(`node:http proxy/direct (one bare hop): throughput ${floor.throughputRatio.toFixed(2)}, p50 +${ms(floor.p50OverheadMs)} ms, p99 +${ms(floor.p99OverheadMs)} ms`);
  return { concurrency, paths: Object.fromEntries(figures), ...comparison, bareProxy: floor };
}

async function main(run: Run) {
  const variables = benchEnv('gateway', PORT_BASE, { HANGAR_SANDBOX_WARM_POOL: '0', HANGAR_LOG_LEVEL: LOG_LEVEL });
  const config = loadConfig(variables);
  run.runtime = new BwrapRuntime({ dataDir: config.dataDir });
  log(`gateway benchmark on ${os.cpus().length} cores: concurrency ${POINTS.join(', ')}, ${SECONDS} s per path and point after ${WARMUP_SECONDS} s of warm-up`);
  const { stack, credentials } = await prepare(config, (line) => log(`  [stack] ${line}`), { keepRunning: false });
  run.stack = stack;
  const full = configOnStack(config, stack);
  // Nothing of the developer's own HANGAR_* settings reaches the platform processes.
  const inherited = Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith('HANGAR_')));
  startPlatform(run, platformEnv(full, stack, { ...inherited, ...variables }), full.dataDir);
  for (const url of [full.baseUrl, full.runUrl]) await waitUntilReady(`the API at ${url}`, () => apiHealthy(url), { timeoutMs: 90_000, intervalMs: 250 });

  const name = `bench-${Date.now().toString(36)}`;
  const deployed = await deployFolder(path.join(repoRoot(), 'examples', 'agent'), { baseUrl: full.baseUrl, apiKey: credentials.apiKey, workspace: credentials.workspace }, { name });
  if (deployed.status !== 'DEPLOYED') throw new Error(`the agent did not deploy: ${JSON.stringify(deployed.events)}`);
  const domain = `${name}.bench.example`;
  await createCustomDomain(full.baseUrl, credentials, { metadata: { name }, spec: { domain, target: { kind: 'agent', name } } });
  run.pg = createPool(stack.databaseUrl, 1);
  const { rows } = await run.pg.query<{ spec: WorkloadSpec; socket_path: string; sandbox_id: string }>(
    "SELECT spec, state #>> '{serving,socketPath}' AS socket_path, state #>> '{serving,sandboxId}' AS sandbox_id FROM resources WHERE kind = 'agents' AND name = $1",
    [name],
  );
  const { spec, socket_path: socketPath, sandbox_id: sandboxId } = rows[0];
  const sandboxPid = await pidInSandboxNetwork(run.runtime, sandboxId);
  // The sandbox's processes (its API with the port forwarder, the agent) live as long as the run.
  const sandboxPids = await run.runtime.pids(sandboxId);
  const apiProcess = run.processes.find((child) => child.name === 'api')!;
  const bareProxyPort = await startBareProxy(run, socketPath);
  const meter: CpuMeter = (load) => ({
    'load generator': processCpuMs([load.pid]),
    'API process': processCpuMs([apiProcess.pid()!]),
    'bare proxy': processCpuMs([run.bareProxy!.pid!]),
    sandbox: processCpuMs(sandboxPids),
    machine: machineBusyMs(),
  });

  const results = [];
  for (const concurrency of POINTS) {
    const request = { method: 'POST', body: BODY, concurrency, headers: { 'content-type': 'application/json' } };
    const targets: [string, LoadTarget, string[]?][] = [
      [
        'gateway',
        { ...request, address: { host: '127.0.0.1', port: full.runPort }, path: `/${credentials.workspace}/agents/${name}`, headers: { ...request.headers, authorization: `Bearer ${credentials.apiKey}` } },
      ],
      [
        'gateway by custom domain',
        { ...request, address: { host: '127.0.0.1', port: full.runPort }, path: '/', headers: { ...request.headers, host: domain, authorization: `Bearer ${credentials.apiKey}` } },
      ],
      ['node:http proxy', { ...request, address: { host: '127.0.0.1', port: bareProxyPort }, path: '/' }],
      ['direct', { ...request, address: { socketPath }, path: '/' }],
      ['agent port', { ...request, address: { host: '127.0.0.1', port: workloadPort(spec) }, path: '/' }, ['nsenter', `--net=/proc/${sandboxPid}/ns/net`, '--']],
    ];
    const loads = targets.map(([label, target, wrapper]) => LoadProcess.start(label, target, wrapper));
    run.loads.push(...loads);
    const figures = await measureLoads(loads, { warmupMs: WARMUP_SECONDS * 1000, durationMs: SECONDS * 1000, rounds: ROUNDS }, meter);
    results.push(report(concurrency, figures));
    await Promise.all(loads.map((load) => load.close()));
  }

  const file = path.join(repoRoot(), 'bench', 'results', 'gateway.json');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const machine = { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, node: process.version };
  fs.writeFileSync(file, `${JSON.stringify({ benchmark: 'gateway', at: new Date().toISOString(), machine, settings: { seconds: SECONDS, warmupSeconds: WARMUP_SECONDS, rounds: ROUNDS, logLevel: LOG_LEVEL }, points: results }, null, 2)}\n`);
  log(`\nresults in ${path.relative(process.cwd(), file)}`);
}

/** Stops what the run started, in order: load, platform processes, sandboxes, services. */
async function stop(run: Run): Promise<void> {
  await Promise.allSettled(run.loads.map((load) => load.close()));
  run.bareProxy?.kill();
  await Promise.allSettled(run.processes.map((child) => child.stop()));
  const runtime = run.runtime;
  for (const sandbox of (await runtime?.list().catch(() => [])) ?? []) await runtime!.remove(sandbox.id).catch(() => undefined);
  await run.pg?.end();
  await run.stack?.stop();
}

const run: Run = { processes: [], loads: [] };
let stopping = false;
process.on('SIGINT', () => {
  if (stopping) process.exit(1);
  stopping = true;
  void stop(run).finally(() => process.exit(130));
});
main(run)
  .then(() => stop(run))
  .catch(async (err) => {
    console.error(err);
    await stop(run);
    process.exitCode = 1;
  });
