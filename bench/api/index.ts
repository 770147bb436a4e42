import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { principalForApiKey } from '../../store/principals';
import { TokenService } from '../../api/auth/tokens';
import { createPool } from '../../store/postgres-pool';
import type { HangarConfig } from '../../domain/config';
import { loadMasterKey } from '../../store/master-key';
import { SecretBox } from '../../domain/secret-box';
import { prepare } from '../../scripts/prepare';
import type { Stack } from '../../scripts/stack';
import { repoRoot } from '../../scripts/stack/binaries';
import { HttpClient } from '../common/http';
import { measureInterleaved } from '../common/load';
import { ratios, type LatencySummary } from '../common/stats';
import { configOnStack } from '../common/stack';
import { formatTable } from '../../domain/text-table';
import { benchApiConfig } from './config';
import { comparisons, measurements, type ScenarioContext } from './scenarios';
import { seedTenant } from './seed';

/**
 * Foundation API benchmark (after a build: `npm run bench:api`).
 *
 * Starts its own services (data in .data-bench/api, ports in config.ts), the base_url app and a
 * bare Fastify app in a server process, seeds a workspace with agents through the API, then times
 * a fixed number of requests per operation at a fixed concurrency over keep-alive HTTP on
 * loopback, each beside its floor measured in the same run: the SQL the handler runs, jose's
 * signing alone, a bare Fastify route. Prints the table and writes bench/results/api.json. Stops
 * everything it started at the end, on failure and on Ctrl-C.
 *
 * Options (environment): BENCH_REQUESTS (2000 timed per operation), BENCH_WARMUP (200),
 * BENCH_CONCURRENCY (4 in flight), BENCH_ROUNDS (10: each operation's requests in that many
 * slices, interleaved with the others'), BENCH_AGENTS (200), BENCH_LOG_LEVEL (none: the server
 * does not log; 'info' measures with request logging, to a file), BENCH_PROFILE=<dir> (CPU
 * profile of the server process), BENCH_ONLY=<keys> (only these operations, comma-separated, e.g.
 * api.get.key,framework.hello; see scenarios.ts), BENCH_DATA_DIR.
 */
const env = process.env;
const REQUESTS = positive('BENCH_REQUESTS', 2000);
const WARMUP = positive('BENCH_WARMUP', 200);
const CONCURRENCY = positive('BENCH_CONCURRENCY', 4);
const AGENTS = positive('BENCH_AGENTS', 200);
const ROUNDS = positive('BENCH_ROUNDS', 10);

function positive(name: string, fallback: number): number {
  const value = Number(env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got '${env[name]}'`);
  return value;
}

const log = (line: string) => process.stdout.write(`${line}\n`);

function startServer(config: HangarConfig): Promise<ChildProcess> {
  const child = fork(path.join(__dirname, 'server.js'), [], {
    env: { ...env, HANGAR_BENCH_CONFIG: JSON.stringify(config) },
    execArgv: env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(env.BENCH_PROFILE)}`] : [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code, signal) => reject(new Error(`bench server exited (${signal ?? code}) before it was ready`)));
  });
}

function stopServer(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

const ms = (value: number) => value.toFixed(2);
const times = (value: number) => `${value.toFixed(2)}x`;

function report(summaries: Map<string, { label: string; summary: LatencySummary }>) {
  const rows = comparisons(AGENTS)
    .filter((comparison) => summaries.has(comparison.figure) && summaries.has(comparison.floor))
    .map((comparison) => {
    const figure = summaries.get(comparison.figure)!;
    const floor = summaries.get(comparison.floor)!;
    return { ...comparison, figureLabel: figure.label, floorLabel: floor.label, figureSummary: figure.summary, floorSummary: floor.summary, ratio: ratios(figure.summary, floor.summary) };
  });
  log(`\nmeasured: ${REQUESTS} timed operations each (after ${WARMUP} untimed), ${CONCURRENCY} in flight, in ${ROUNDS} interleaved rounds; ms; ratio = figure / floor`);
  log(
    formatTable(
      ['operation', 'p50', 'p95', 'p99', 'ops/s'],
      [...summaries.values()].map(({ label, summary: s }) => [label, ms(s.p50Ms), ms(s.p95Ms), ms(s.p99Ms), Math.round(s.throughputPerSecond)]),
    ),
  );
  if (rows.length === 0) return rows;
  log('');
  log(
    formatTable(
      ['comparison', 'p50', 'floor p50', 'ratio p50', 'ratio p95', 'ratio p99', 'ops/s', 'floor ops/s', 'ratio ops/s'],
      rows.map((r) => [
        r.name,
        ms(r.figureSummary.p50Ms),
        ms(r.floorSummary.p50Ms),
        times(r.ratio.p50),
        times(r.ratio.p95),
        times(r.ratio.p99),
        Math.round(r.figureSummary.throughputPerSecond),
        Math.round(r.floorSummary.throughputPerSecond),
        times(r.ratio.throughput),
      ]),
    ),
  );
  return rows;
}

function writeResults(summaries: Map<string, { label: string; summary: LatencySummary }>, rows: ReturnType<typeof report>): string {
  const file = path.join(repoRoot(), 'bench', 'results', 'api.json');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const result = {
    benchmark: 'api',
    at: new Date().toISOString(),
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memoryGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version },
    settings: { requests: REQUESTS, warmup: WARMUP, concurrency: CONCURRENCY, rounds: ROUNDS, agents: AGENTS, serverLogLevel: env.BENCH_LOG_LEVEL || 'none' },
    operations: Object.fromEntries([...summaries].map(([key, { label, summary }]) => [key, { label, ...summary }])),
    comparisons: rows.map((r) => ({ name: r.name, figure: r.figure, floor: r.floor, ratio: r.ratio })),
  };
  fs.writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
  return file;
}

async function run(state: { stack?: Stack; server?: ChildProcess; closers: (() => unknown)[] }) {
  const config = benchApiConfig();
  log(`API benchmark: ${AGENTS} agents, ${REQUESTS} requests per operation, ${CONCURRENCY} in flight; data in ${path.relative(process.cwd(), config.dataDir)}`);
  // Services, both schemas and the first account with its key, as `npm start` has them.
  const { stack, credentials: admin } = await prepare(config, (line) => log(`  [stack] ${line}`), { keepRunning: false });
  state.stack = stack;
  const full = configOnStack(config, stack);
  // createPool: an idle connection ended by a stopping PostgreSQL (Ctrl-C) must not crash the run.
  const pool = createPool(stack.databaseUrl, CONCURRENCY);
  state.closers.push(() => pool.end());

  state.server = await startServer(full);
  const api = new HttpClient(`http://127.0.0.1:${full.basePort}`, CONCURRENCY);
  const framework = new HttpClient(`http://127.0.0.1:${full.runPort}`, CONCURRENCY);
  state.closers.push(() => api.close(), () => framework.close());

  const seedBegan = performance.now();
  const tenant = await seedTenant(api, admin.apiKey, AGENTS, CONCURRENCY);
  log(`seeded workspace '${tenant.workspace}' with ${AGENTS} agents through the API in ${((performance.now() - seedBegan) / 1000).toFixed(1)} s`);

  const principal = await principalForApiKey(pool, tenant.apiKey);
  const grant = principal?.workspaces.get(tenant.workspace);
  if (!principal || !grant) throw new Error('the seeded API key resolves to no member of the bench workspace');
  const token = await api.expect(200, 'POST', '/v0/oauth/token', { 'content-type': 'application/x-www-form-urlencoded' },
    new URLSearchParams({ grant_type: 'client_credentials', client_id: tenant.clientId, client_secret: tenant.clientSecret }).toString());
  const accessToken = (JSON.parse(token.body) as { access_token: string }).access_token;
  const listed = JSON.parse((await api.expect(200, 'GET', '/v0/agents', { authorization: `Bearer ${tenant.apiKey}`, 'x-service-workspace': tenant.workspace })).body) as unknown[];
  if (listed.length !== AGENTS) throw new Error(`the workspace lists ${listed.length} agents, expected ${AGENTS} (BENCH_AGENTS changed? delete ${config.dataDir})`);
  // One JWT request alone before the concurrent ones: a fresh TokenService loads its verification
  // keys on the first verify, and concurrent first verifies fail (401) until that load is done.
  await api.expect(200, 'GET', `/v0/agents/${tenant.agentNames[0]}`, { authorization: `Bearer ${accessToken}`, 'x-service-workspace': tenant.workspace });

  const ctx: ScenarioContext = {
    api,
    framework,
    pool,
    tokens: new TokenService(pool, new SecretBox(loadMasterKey(full)), full.baseUrl, full.tokenTtlSeconds),
    tenant,
    workspaceId: grant.id,
    serviceAccountId: principal.id,
    accountId: principal.accountId,
    accessToken,
  };
  const only = env.BENCH_ONLY?.split(',').map((key) => key.trim());
  const chosen = measurements(ctx).filter((m) => !only || only.includes(m.key));
  log(`measuring ${chosen.length} operations in ${ROUNDS} interleaved rounds...`);
  const measured = await measureInterleaved(chosen, { count: REQUESTS, concurrency: CONCURRENCY, warmup: WARMUP, rounds: ROUNDS });
  const summaries = new Map(chosen.map(({ key, label }) => [key, { label, summary: measured.get(key)! }]));
  const rows = report(summaries);
  log(`\nwrote ${path.relative(process.cwd(), writeResults(summaries, rows))}`);
}

async function main() {
  const state: { stack?: Stack; server?: ChildProcess; closers: (() => unknown)[] } = { closers: [] };
  let cleaning: Promise<void> | undefined;
  let interrupted = false;
  const cleanUp = () =>
    (cleaning ??= (async () => {
      await stopServer(state.server);
      await Promise.allSettled(state.closers.map(async (close) => close()));
      await state.stack?.stop();
    })());
  process.on('SIGINT', () => {
    interrupted = true;
    log('\ninterrupted: stopping the server and the services');
    void cleanUp().finally(() => process.exit(130));
  });
  try {
    await run(state);
  } catch (err) {
    // After Ctrl-C the services go away under the running requests: that is no failure to report.
    if (!interrupted) console.error(`API benchmark failed: ${(err as Error).stack}`);
    process.exitCode = 1;
  } finally {
    await cleanUp();
  }
}

void main();
