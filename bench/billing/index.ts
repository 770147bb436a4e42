import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { Client, Connection } from '@temporalio/client';
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Pool } from 'pg';
import { createApiKey, createServiceAccount } from '../../store/service-accounts';
import { usageTables } from '../../domain/billing/storage';
import { migrateClickHouse } from '../../store/clickhouse-schema';
import { loadConfig, type HangarConfig } from '../../domain/config';
import { startStack } from '../../scripts/stack';
import { applySchemas } from '../../scripts/stack/schema';
import { processTreePids } from '../../scripts/stack/service-process';
import { CpuMeter } from '../common/cpu';
import { HttpClient } from '../common/http';
import { Dataset, DAYS, WORKSPACES } from './dataset';
import { benchQueries, type BenchQuery } from './queries';

/**
 * Billing benchmark (run by hand after a build: `node dist/bench/billing/index.js`).
 *
 * Loads synthetic events through the ingestion path (HTTP -> PostgreSQL ledger and outbox ->
 * usage-flush workflow -> ClickHouse), then times representative metrics queries over HTTP
 * beside the same aggregation run as SQL on the raw events table.
 *
 * Services: its own stack under .data-bench (ports of the defaults + 300), or external ones
 * through DATABASE_URL, CLICKHOUSE_URL and TEMPORAL_ADDRESS. Options (environment):
 *   BENCH_EVENTS (10000000), BENCH_BATCH (10000 events per request), BENCH_CONCURRENCY (4
 *   requests in flight), BENCH_LIVE_EVENTS (2000000 events of the last hour, sent after the load;
 *   0: none), BENCH_RUNS (20 timed runs per query), BENCH_KEEP=1 (leave the stack
 *   running, and reuse already loaded data next time), BENCH_FRESH=1 (load again even so),
 *   BENCH_PROFILE=<dir> (CPU profiles of the service processes).
 */
const ACCOUNT = 'acc-bench';
const env = process.env;
const TOTAL = Number(env.BENCH_EVENTS ?? 10_000_000);
const BATCH = Number(env.BENCH_BATCH ?? 10_000);
const CONCURRENCY = Number(env.BENCH_CONCURRENCY ?? 4);
const RUNS = Number(env.BENCH_RUNS ?? 20);
const LIVE = Number(env.BENCH_LIVE_EVENTS ?? 2_000_000);
const RAW_RUNS = Math.max(3, Math.ceil(RUNS / 4));

const log = (line: string) => process.stdout.write(`${line}\n`);

function benchConfig(): HangarConfig {
  const port = (name: string, fallback: number) => String(Number(env[name] ?? fallback) + 300);
  return loadConfig({
    ...env,
    HANGAR_DATA_DIR: env.HANGAR_DATA_DIR ?? path.resolve(__dirname, '../../../.data-bench'),
    HANGAR_POSTGRES_PORT: port('HANGAR_POSTGRES_PORT', 55432),
    HANGAR_CLICKHOUSE_HTTP_PORT: port('HANGAR_CLICKHOUSE_HTTP_PORT', 18123),
    HANGAR_CLICKHOUSE_TCP_PORT: port('HANGAR_CLICKHOUSE_TCP_PORT', 19000),
    HANGAR_TEMPORAL_PORT: port('HANGAR_TEMPORAL_PORT', 7233),
    HANGAR_TEMPORAL_UI_PORT: port('HANGAR_TEMPORAL_UI_PORT', 8233),
    HANGAR_BASE_PORT: port('HANGAR_BASE_PORT', 8080),
    HANGAR_LOG_LEVEL: 'warn',
  });
}

function startProcess(role: 'api' | 'flush', config: HangarConfig): Promise<ChildProcess> {
  const child = fork(path.join(__dirname, 'processes.js'), [role], {
    env: { ...env, HANGAR_BENCH_CONFIG: JSON.stringify(config) },
    // BENCH_PROFILE=dir writes a CPU profile of each service process there.
    execArgv: env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${env.BENCH_PROFILE}`] : [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`bench ${role} process exited with ${code}`)));
  });
}

async function prepareTenant(pool: Pool): Promise<{ apiKey: string; workspaces: string[] }> {
  const workspaces = Array.from({ length: WORKSPACES }, (_, i) => `bench-ws-${i + 1}`);
  await pool.query("INSERT INTO accounts (id, name) VALUES ($1, 'benchmark') ON CONFLICT DO NOTHING", [ACCOUNT]);
  for (const name of workspaces) {
    await pool.query('INSERT INTO workspaces (id, account_id, name, display_name) VALUES ($1, $2, $1, $1) ON CONFLICT DO NOTHING', [name, ACCOUNT]);
  }
  const sa = await createServiceAccount(pool, { accountId: ACCOUNT, name: 'bench', workspaceId: workspaces[0], role: 'admin', accountAdmin: true, createdBy: null });
  const key = await createApiKey(pool, sa.id, 'bench', null);
  return { apiKey: key.apiKey, workspaces };
}

async function storedEvents(clickhouse: ClickHouseClient, table: string): Promise<number> {
  const result = await clickhouse.query({ query: `SELECT count() AS n FROM ${table} FINAL WHERE account_id = '${ACCOUNT}' AND startsWith(id, 'b-')`, format: 'JSONEachRow' });
  return Number((await result.json<{ n: string }>())[0].n);
}

/**
 * The request bodies of the run, made before the clock starts (as load generators prepare their
 * requests), so that the generator's own work does not take CPU from the services it measures.
 * As Buffers: outside the JavaScript heap, about 250 bytes per event.
 */
function prepareBodies(dataset: Dataset): Buffer[] {
  const bodies: Buffer[] = [];
  for (let from = 0; from < dataset.total; from += BATCH) bodies.push(Buffer.from(dataset.body(from, Math.min(dataset.total, from + BATCH))));
  return bodies;
}

async function ingestAll(http: HttpClient, apiKey: string, bodies: Buffer[], total: number): Promise<number> {
  let next = 0;
  let done = 0;
  const began = Date.now();
  const progress = setInterval(() => log(`  ${done.toLocaleString('en')} events accepted (${Math.round(done / ((Date.now() - began) / 1000)).toLocaleString('en')}/s)`), 10_000);
  const sender = async () => {
    while (next < bodies.length) {
      const index = next++;
      await http.expect(202, 'POST', `/v0/accounts/${ACCOUNT}/usage-events`, jsonHeaders(apiKey), bodies[index]);
      done += Math.min(BATCH, total - index * BATCH);
    }
  };
  try {
    await Promise.all(Array.from({ length: CONCURRENCY }, sender));
  } finally {
    clearInterval(progress);
  }
  return (Date.now() - began) / 1000;
}

async function waitForFlush(pool: Pool): Promise<number> {
  const began = Date.now();
  for (;;) {
    // Empty outbox, and no hour left that reads would take raw.
    const { rows } = await pool.query<{ n: number }>('SELECT (SELECT count(*) FROM usage_outbox) + (SELECT count(*) FROM usage_pending_rollups) AS n');
    if (Number(rows[0].n) === 0) return (Date.now() - began) / 1000;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Where the CPU goes: the load generator (this process), the two service processes and each local service. */
function cpuMeter(config: HangarConfig, children: ChildProcess[]): CpuMeter {
  const service = (name: string) => () => {
    try {
      return processTreePids(Number(fs.readFileSync(path.join(config.dataDir, name, 'service.pid'), 'utf8')));
    } catch {
      return []; // external, or not started here
    }
  };
  return new CpuMeter({
    'load generator': () => [process.pid],
    // The API process and the processes it forks to serve base_url (HANGAR_API_PROCESSES).
    api: () => processTreePids(children[0].pid!),
    flush: () => [children[1].pid!],
    postgres: service('postgres'),
    clickhouse: service('clickhouse'),
    temporal: service('temporal'),
  });
}

function logCpu(title: string, spentMs: Record<string, number>, events = TOTAL): void {
  const us = (ms: number) => ((ms * 1000) / events).toFixed(2);
  log(`${title} (us): ${Object.entries(spentMs).map(([name, ms]) => `${name} ${us(ms)}`).join(', ')}`);
}

/**
 * Events as a running deployment sends them: timestamped within the last hour, so every request
 * lands in the current hours rather than in the past.
 */
async function ingestLive(http: HttpClient, pool: Pool, apiKey: string, workspaces: string[], meter: CpuMeter): Promise<void> {
  const start = Math.floor(Date.now() / 1000) * 1000 - 3_600_000;
  const live = new Dataset(workspaces, start, LIVE, 1, `live-${start}-`);
  log(`live: ${LIVE.toLocaleString('en')} events timestamped within the last hour...`);
  const bodies = prepareBodies(live);
  const before = meter.take();
  const seconds = await ingestAll(http, apiKey, bodies, LIVE);
  const accepting = meter.since(before);
  const drain = await waitForFlush(pool);
  log(`live ingestion: ${Math.round(LIVE / seconds).toLocaleString('en')} events/s accepted; outbox empty ${drain.toFixed(1)} s after the last request`);
  logCpu('  CPU per event while accepting', accepting, LIVE);
}

const jsonHeaders = (apiKey: string) => ({ authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' });

/** Seconds from a 202 to the event showing in the metrics API, for a few single events. */
async function visibilityDelays(http: HttpClient, apiKey: string, workspace: string): Promise<number[]> {
  const delays: number[] = [];
  for (let i = 0; i < 5; i++) {
    const at = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000);
    const id = `probe-${Date.now()}-${i}`;
    const event = { id, timestamp: at.toISOString(), workspace, resourceType: 'job', resourceName: id, billingDimension: 'job_compute_runtime_gbs', quantity: 1 };
    await http.expect(202, 'POST', `/v0/accounts/${ACCOUNT}/usage-events`, jsonHeaders(apiKey), JSON.stringify({ events: [event] }));
    const accepted = performance.now();
    const params = new URLSearchParams({ startTime: at.toISOString(), endTime: new Date(at.getTime() + 1000).toISOString(), resourceName: id });
    for (;;) {
      const res = await http.expect(200, 'GET', `/v0/accounts/${ACCOUNT}/metrics?${params}`, jsonHeaders(apiKey));
      if ((JSON.parse(res.body) as { summary: { totalCost: number } }).summary.totalCost > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    delays.push((performance.now() - accepted) / 1000);
    await new Promise((resolve) => setTimeout(resolve, 700 * i));
  }
  return delays;
}

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function timeApi(http: HttpClient, apiKey: string, query: BenchQuery): Promise<number[]> {
  const samples: number[] = [];
  const once = async () => {
    let cursor: string | undefined;
    do {
      const params = new URLSearchParams({ ...query.params, ...(cursor ? { cursor } : {}) });
      const began = performance.now();
      const res = await http.expect(200, 'GET', `/v0/accounts/${ACCOUNT}/metrics?${params}`, { authorization: `Bearer ${apiKey}` });
      // Timed to the last byte received, like the raw SQL; parsing is the client's business.
      samples.push(performance.now() - began);
      const body = JSON.parse(res.body) as { meta: { hasMore: boolean; nextCursor: string } };
      cursor = query.paged && body.meta?.hasMore ? body.meta.nextCursor : undefined;
    } while (cursor);
  };
  // Warm-up: each of the API's processes (HANGAR_API_PROCESSES, taken in turn) compiles its hot paths.
  for (let i = 0; i < 4; i++) await once();
  samples.length = 0;
  for (let i = 0; i < RUNS; i++) await once();
  return samples;
}

async function timeRaw(clickhouse: ClickHouseClient, sql: string): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i <= RAW_RUNS; i++) {
    const began = performance.now();
    const result = await clickhouse.query({ query: sql, format: 'JSONEachRow' });
    await result.text();
    if (i > 0) samples.push(performance.now() - began);
  }
  return samples;
}

interface BillingBench {
  config: HangarConfig;
  stack: Awaited<ReturnType<typeof startStack>>;
  pool: Pool;
  clickhouse: ReturnType<typeof createClient>;
  tables: ReturnType<typeof usageTables>;
  http: HttpClient;
  apiKey: string;
  dataset: Dataset;
  children: ChildProcess[];
}

/** Drops the events of an earlier run, in PostgreSQL and ClickHouse, and recreates the ClickHouse schema. */
async function clearEarlierRun(bench: BillingBench, loaded: number): Promise<void> {
  const { pool, clickhouse, tables, stack } = bench;
  log(`  clearing ${loaded.toLocaleString('en')} events of an earlier run`);
  await pool.query('TRUNCATE usage_event_ledger, usage_outbox, usage_pending_rollups');
  // Dropped and created again, so that a run measures the current schema.
  const { database, ...stored } = tables;
  for (const table of Object.values(stored)) await clickhouse.command({ query: `DROP TABLE IF EXISTS ${table}` });
  await clickhouse.command({ query: `DROP DATABASE IF EXISTS ${database}` });
  await migrateClickHouse(clickhouse, stack.clickhouseDatabase);
}

/** Loads the whole dataset through the API (unless an earlier run left exactly it), timing acceptance and flush. */
async function loadDataset(bench: BillingBench): Promise<void> {
  const { pool, clickhouse, tables, config, children, http, apiKey, dataset } = bench;
  let loaded = await storedEvents(clickhouse, tables.raw);
  if (loaded === TOTAL && env.BENCH_FRESH !== '1') {
    log(`reusing ${loaded.toLocaleString('en')} events loaded by an earlier run`);
    // Query timings below are for the data as the earlier run left it (and, after an upgrade,
    // once the flush has filled new rollups from it).
    log(`  flush and rollups up to date after ${(await waitForFlush(pool)).toFixed(1)} s`);
    return;
  }
  if (loaded > 0) await clearEarlierRun(bench, loaded);
  log('preparing request bodies...');
  const bodies = prepareBodies(dataset);
  log('ingesting...');
  const meter = cpuMeter(config, children);
  const before = meter.take();
  const seconds = await ingestAll(http, apiKey, bodies, TOTAL);
  bodies.length = 0;
  log(`ingestion: ${TOTAL.toLocaleString('en')} events accepted in ${seconds.toFixed(1)} s = ${Math.round(TOTAL / seconds).toLocaleString('en')} events/s`);
  const accepted = meter.since(before);
  const drain = await waitForFlush(pool);
  log(`flush: outbox empty ${drain.toFixed(1)} s after the last request was accepted`);
  log(`  end to end (accepted and in ClickHouse): ${Math.round(TOTAL / (seconds + drain)).toLocaleString('en')} events/s`);
  logCpu('CPU per event while accepting', accepted);
  logCpu('CPU per event, accepting and flushing', meter.since(before));
  loaded = await storedEvents(clickhouse, tables.raw);
  if (loaded !== TOTAL) throw new Error(`ClickHouse holds ${loaded} events, expected ${TOTAL}`);
}

/** Each metrics query through the API beside the raw SQL it stands for. */
async function compareQueries(bench: BillingBench, workspace: string): Promise<void> {
  const { http, apiKey, clickhouse, tables, dataset } = bench;
  log(`\nqueries: ${RUNS} timed runs over HTTP (every page counted for paged ones), ${RAW_RUNS} of the raw SQL (FINAL, deduplicated)`);
  log('query | API p50 ms | API p95 ms | raw SQL p50 ms | raw SQL p95 ms | ratio p95 (API/raw)');
  for (const query of benchQueries(tables, ACCOUNT, dataset.start, dataset.end, workspace)) {
    const api = await timeApi(http, apiKey, query);
    const raw = await timeRaw(clickhouse, query.rawSql);
    const ratio = percentile(api, 95) / percentile(raw, 95);
    log(`${query.name} | ${percentile(api, 50).toFixed(1)} | ${percentile(api, 95).toFixed(1)} | ${percentile(raw, 50).toFixed(1)} | ${percentile(raw, 95).toFixed(1)} | ${ratio.toFixed(2)}`);
  }
}

async function main() {
  const config = benchConfig();
  log(`billing benchmark: ${TOTAL.toLocaleString('en')} events, ${BATCH} per request, ${CONCURRENCY} in flight`);
  const stack = await startStack(config, (line) => log(`  [stack] ${line}`), { keepRunning: env.BENCH_KEEP === '1' });
  const children: ChildProcess[] = [];
  try {
    await applySchemas(stack);
    const full: HangarConfig = {
      ...config,
      databaseUrl: stack.databaseUrl,
      clickhouseUrl: stack.clickhouseUrl,
      clickhouseDatabase: stack.clickhouseDatabase,
      temporalAddress: stack.temporalAddress,
    };
    const pool = new Pool({ connectionString: stack.databaseUrl, max: 2 });
    const clickhouse = createClient({ url: stack.clickhouseUrl, request_timeout: 300_000 });
    const { apiKey, workspaces } = await prepareTenant(pool);
    const end = Math.floor(Date.now() / 86_400_000) * 86_400_000;
    const dataset = new Dataset(workspaces, end - DAYS * 86_400_000, TOTAL);
    children.push(await startProcess('api', full), await startProcess('flush', full));
    const http = new HttpClient(`http://127.0.0.1:${config.basePort}`, CONCURRENCY);
    const bench: BillingBench = { config, stack, pool, clickhouse, tables: usageTables(stack.clickhouseDatabase), http, apiKey, dataset, children };

    await loadDataset(bench);
    if (LIVE > 0) await ingestLive(http, pool, apiKey, workspaces, cpuMeter(config, children));
    const delays = await visibilityDelays(http, apiKey, workspaces[0]);
    log(`visibility: a single accepted event shows in the metrics API after ${delays.map((d) => d.toFixed(2)).join(', ')} s`);
    await compareQueries(bench, workspaces[0]);

    http.close();
    await pool.end();
    await clickhouse.close();
    const temporal = new Client({ connection: await Connection.connect({ address: stack.temporalAddress }) });
    await temporal.workflow.getHandle('usage-flush-bench').terminate('benchmark over').catch(() => undefined);
    await temporal.connection.close();
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(`billing benchmark failed: ${(err as Error).stack}`);
  process.exit(1);
});
