import { createClient, type ClickHouseClient } from '@clickhouse/client';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { parseMetricsQuery, type MetricsQuery } from '../../domain/billing/metrics-query';
import { groupKey, type Row } from '../../domain/billing/metrics-response';
import { bucketSql, groupListSql, totalsSql, type MetricsScope } from '../../domain/billing/metrics-sql';
import { createStagingSql, deltaSql, stagingTable } from '../../domain/billing/rollup-sql';
import { usageTables } from '../../domain/billing/storage';
import { RAW_COLUMNS } from '../../domain/billing/usage-batch';
import { startLocalClickHouse } from '../../scripts/stack/clickhouse';
import { freePort } from '../../scripts/stack/free-port';
import { startClickHouseCluster } from '../../scripts/stack/clickhouse-cluster';
import type { LaunchContext } from '../../scripts/stack/local-service';
import { CLUSTER_SETTINGS } from '../../store/clickhouse-client';
import { migrateClickHouse } from '../../store/clickhouse-schema';

/**
 * Billing queries on a two-shard ClickHouse cluster vs one server, on this machine (run after a
 * build: `node dist/bench/billing/cluster.js`). Both get the same events through the flush's
 * own statements (staging table, raw insert, rollup deltas), then each metrics page is read as
 * the API reads it (groups, buckets of the page, totals), the answers compared, and timed. The
 * single server is the floor; the cluster's figures are ratios to it. Both shards share this
 * machine's cores, so expect no speed-up: the ratio is the cost of the Distributed layer.
 *
 * Options (environment): BENCH_EVENTS (1000000), BENCH_RUNS (10 timed runs per query).
 */
const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 10);
const DATABASE = 'hangar';
const ACCOUNT = 'acc-bench';
const DAY_S = 86_400;
const START = Date.parse('2026-01-01T00:00:00Z') / 1000;
const DAYS = 30;
const BATCH = 100_000;
const DIMENSIONS = [
  ['sandbox', 'sandbox_compute_runtime_gbs'],
  ['sandbox', 'sandbox_snapshot_storage_gbs'],
  ['agent', 'agent_async_requests_count'],
  ['job', 'job_compute_runtime_gbs'],
  ['volume', 'volume_storage_gbs'],
];

const log = (line: string) => process.stdout.write(`${line}\n`);
const tables = usageTables(DATABASE);
const scope: MetricsScope = { tables, accountId: ACCOUNT };

/** TabSeparated rows of events `from` to `to`: 3 workspaces, 500 resources, spread over DAYS. */
function eventRows(from: number, to: number): string {
  const lines: string[] = [];
  for (let i = from; i < to; i++) {
    const resource = (i * 7919) % 500;
    const [type, dimension] = DIMENSIONS[resource % DIMENSIONS.length];
    const time = new Date((START + ((i * 104_729) % (DAYS * DAY_S))) * 1000).toISOString().slice(0, 19).replace('T', ' ');
    const quantity = (1 + (i % 97)) / 4;
    lines.push([ACCOUNT, `ev-${i}`, time, `ws-${resource % 3}`, type, `res-${resource}`, `uuid-${resource}`, dimension, quantity, quantity / 1000].join('\t'));
  }
  return lines.join('\n') + '\n';
}

/** Loads every event in batches, as the flush moves them; returns the seconds it took. */
async function load(client: ClickHouseClient): Promise<number> {
  const began = process.hrtime.bigint();
  for (let from = 0; from < EVENTS; from += BATCH) {
    const staging = stagingTable(tables, `bench${from}`);
    await client.command({ query: createStagingSql(tables, staging) });
    const result = await client.exec({ query: `INSERT INTO ${staging} (${RAW_COLUMNS}) FORMAT TabSeparated`, values: Readable.from([eventRows(from, Math.min(EVENTS, from + BATCH))]) });
    await new Promise<void>((resolve, reject) => result.stream.on('end', resolve).on('error', reject).resume());
    await client.command({ query: `INSERT INTO ${tables.raw} (${RAW_COLUMNS}) SELECT ${RAW_COLUMNS} FROM ${staging}` });
    for (const query of deltaSql(tables, staging)) await client.command({ query });
    await client.command({ query: `DROP TABLE ${staging}` });
  }
  return Number(process.hrtime.bigint() - began) / 1e9;
}

async function rows(client: ClickHouseClient, query: string): Promise<Row[]> {
  return (await (await client.query({ query, format: 'JSON' })).json<Row>()).data;
}

/** One page as MetricsReader reads it: the groups, the buckets up to the page's last group, the totals. */
async function page(client: ClickHouseClient, query: MetricsQuery): Promise<Row[][]> {
  if (query.groupBy.length === 0) return [await rows(client, bucketSql(scope, query, undefined, undefined))];
  const groups = await rows(client, groupListSql(scope, query, undefined));
  const served = groups.slice(0, query.limit);
  const lastKey = served.length > 0 ? groupKey(query, served[served.length - 1]) : undefined;
  const [buckets, totals] = await Promise.all([lastKey ? rows(client, bucketSql(scope, query, undefined, lastKey)) : [], rows(client, totalsSql(scope, query))]);
  return [groups, buckets, totals];
}

async function medianMs(run: () => Promise<unknown>): Promise<number> {
  await run();
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const began = process.hrtime.bigint();
    await run();
    samples.push(Number(process.hrtime.bigint() - began) / 1e6);
  }
  return samples.sort((a, b) => a - b)[Math.floor(samples.length / 2)];
}

const iso = (seconds: number) => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
const QUERIES: Record<string, Record<string, string>> = {
  '30 days daily, ungrouped': { startTime: iso(START), endTime: iso(START + DAYS * DAY_S), resolution: 'daily' },
  '30 days daily by workspace,resource_type,billing_dimension': { startTime: iso(START), endTime: iso(START + DAYS * DAY_S), resolution: 'daily', groupBy: 'workspace,resource_type,billing_dimension' },
  '7 days hourly by resource_name (first page)': { startTime: iso(START + 20 * DAY_S), endTime: iso(START + 27 * DAY_S), resolution: 'hourly', groupBy: 'resource_name' },
  'ragged 3 days hourly by billing_dimension': { startTime: iso(START + 2 * DAY_S + 1234), endTime: iso(START + 5 * DAY_S + 4321), resolution: 'hourly', groupBy: 'billing_dimension' },
  '1 day hourly by resource_uuid, one workspace': { startTime: iso(START + 9 * DAY_S), endTime: iso(START + 10 * DAY_S), resolution: 'hourly', groupBy: 'resource_uuid', workspace: 'ws-1' },
};

/** A page's rows in a fixed order: buckets and totals come in hash order (the API puts them in place itself). */
async function canonical(client: ClickHouseClient, query: MetricsQuery): Promise<string> {
  return JSON.stringify((await page(client, query)).map((set) => set.map((row) => JSON.stringify(row)).sort()));
}

async function compare(single: ClickHouseClient, sharded: ClickHouseClient): Promise<void> {
  for (const [name, params] of Object.entries(QUERIES)) {
    const query = parseMetricsQuery(params);
    if ((await canonical(single, query)) !== (await canonical(sharded, query))) throw new Error(`${name}: the cluster's answer differs`);
    const floor = await medianMs(() => page(single, query));
    const cluster = await medianMs(() => page(sharded, query));
    log(`${name.padEnd(62)} one server ${floor.toFixed(1).padStart(7)} ms   2 shards ${cluster.toFixed(1).padStart(7)} ms   ${(cluster / floor).toFixed(2)}x`);
  }
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-bench-ch-cluster-'));
  fs.chmodSync(dataDir, 0o755);
  const ctx: LaunchContext = { log: () => undefined, bindToParent: true, reuseRunning: false, readyTimeoutMs: 120_000 };
  const password = 'bench-cluster';
  const singleServer = await startLocalClickHouse({ dataDir, name: 'clickhouse-single', httpPort: await freePort(), tcpPort: await freePort(), password, database: DATABASE }, ctx);
  const cluster = await startClickHouseCluster({ dataDir, name: 'bench_2x1', shards: 2, replicas: 1, password, database: DATABASE });
  const single = createClient({ url: singleServer.url });
  const sharded = createClient({ url: cluster.servers[0].url, clickhouse_settings: CLUSTER_SETTINGS });
  try {
    await migrateClickHouse(single, DATABASE);
    await migrateClickHouse(sharded, DATABASE, 'bench_2x1');
    log(`${EVENTS} events, ${RUNS} timed runs per query (median), one machine (${os.cpus().length} cores)`);
    const loadFloor = await load(single);
    const loadCluster = await load(sharded);
    log(`${'load through the flush statements'.padEnd(62)} one server ${loadFloor.toFixed(1).padStart(7)} s    2 shards ${loadCluster.toFixed(1).padStart(7)} s    ${(loadCluster / loadFloor).toFixed(2)}x`);
    await compare(single, sharded);
  } finally {
    await Promise.allSettled([single.close(), sharded.close()]);
    await cluster.stop();
    await singleServer.service.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
