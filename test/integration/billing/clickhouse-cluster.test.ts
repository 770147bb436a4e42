import { createClient, type ClickHouseClient } from '@clickhouse/client';
import fs from 'node:fs';
import path from 'node:path';
import { Pool } from 'pg';
import { flushUsageOutbox } from '../../../activities/usage-flush';
import { BILLING_DIMENSIONS, BILLING_DIMENSION_NAMES } from '../../../domain/billing/dimensions';
import { loadConfig } from '../../../domain/config';
import { prepare } from '../../../scripts/prepare';
import { CLUSTER_SETTINGS } from '../../../store/clickhouse-client';
import { migrateClickHouse } from '../../../store/clickhouse-schema';
import { migrate } from '../../../store/migrate';
import { startClickHouseCluster, type LocalClickHouseCluster } from '../../../scripts/stack/clickhouse-cluster';
import { addIdentity, testConfig, unique } from '../../helpers/platform';
import { testStack } from '../../setup/stack';
import { waitUntilReady } from '../../../scripts/stack/readiness';
import { createBillingTenant, metricsUrl, startBillingHarness, type BillingHarness, type BillingTenant, type EventInput } from './helpers';

/**
 * The usage schema on ClickHouse clusters (CLICKHOUSE_CLUSTER) of two shards, of one shard of
 * two replicas and of two shards of two replicas each, against the test stack's single server: the same events, through the same
 * API and flush (a retried flush storing a batch twice included), give the same answers to
 * every metrics query.
 */
const DATABASE = 'hangar';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const base = Date.parse('2026-03-02T00:00:00Z'); // a Monday
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

/** One deployment under test: its app, and its credential of the tenant (the same ids and names on both). */
interface Side {
  h: BillingHarness;
  credential: string;
}

/** The single server and the cluster, each with the same tenant and events. */
interface Comparison {
  tenant: BillingTenant;
  single: Side;
  sharded: Side;
  /** Flushes made to fail part way (one per side). */
  injectedFailures: number;
}

jest.setTimeout(60_000);

const stack = testStack();
const events = generateEvents();

/** A fixed spread of events: every dimension, two workspaces, a few dozen resources, sub-hour times over four days. */
function generateEvents(): Omit<EventInput, 'workspace'>[] {
  const generated: Omit<EventInput, 'workspace'>[] = [];
  let seed = 19;
  const next = (bound: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed % bound;
  };
  for (let i = 0; i < 600; i++) {
    const dimension = BILLING_DIMENSION_NAMES[next(BILLING_DIMENSION_NAMES.length)];
    const resource = next(30);
    generated.push({
      id: `ev-${i}`,
      timestamp: iso(base + next(4 * 24 * 60) * 60_000 + next(60) * 1000),
      resourceType: BILLING_DIMENSIONS[dimension].resourceType,
      resourceName: `res-${String(resource).padStart(2, '0')}`,
      resourceUuid: `uuid-${resource}`,
      billingDimension: dimension,
      quantity: 1 + next(500) / 4,
    });
  }
  return generated;
}

/** Alike but for their ids: flushed apart, their rollup deltas are equal blocks, which replicated tables drop as repeats unless told not to. */
const twins = ['twin-1', 'twin-2'].map((id) => ({
  id,
  timestamp: iso(base + 30 * HOUR + 60_000),
  resourceType: 'volume',
  resourceName: 'vol-twin',
  resourceUuid: 'uuid-twin',
  billingDimension: 'volume_storage_gbs',
  quantity: 7.25,
}));

const batch = (tenant: BillingTenant, from: number, to: number) =>
  events.slice(from, to).map((event, i) => ({ ...event, workspace: (from + i) % 3 === 0 ? tenant.otherWorkspace : tenant.workspace }));

/** The ClickHouse client of `h` failing once, on the first rollup insert: the raw rows of that batch are stored, the rest is not. */
function failingOnceAfterRaw(h: BillingHarness, failed: () => void): ClickHouseClient {
  let done = false;
  return new Proxy(h.clickhouse, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (property !== 'command') return typeof value === 'function' ? value.bind(target) : value;
      return async (params: { query: string }) => {
        if (!done && params.query.startsWith(`INSERT INTO ${h.tables.hourly} `)) {
          done = true;
          failed();
          throw new Error('injected: the flush dies after storing the raw events');
        }
        return target.command(params);
      };
    },
  });
}

/** Ingests through the API and flushes as the platform does: phase by phase, the same on both sides. */
async function ingestPhases(c: Comparison, side: Side): Promise<void> {
  const accepted = async (from: number, to: number, extra: EventInput[] = []) => {
    const payload = { events: [...batch(c.tenant, from, to), ...extra] };
    const res = await side.h.call(side.credential, { method: 'POST', url: `/v0/accounts/${c.tenant.accountId}/usage-events`, payload });
    expect(res.statusCode).toBe(202);
    return res.json() as { accepted: number; duplicates: number };
  };
  expect(await accepted(0, 200)).toEqual({ accepted: 200, duplicates: 0 });
  await side.h.flush();
  // A flush that dies part way and is retried stores this batch's raw events twice.
  expect(await accepted(200, 400)).toEqual({ accepted: 200, duplicates: 0 });
  const failing = failingOnceAfterRaw(side.h, () => c.injectedFailures++);
  await expect(flushUsageOutbox(side.h.pg, failing, side.h.tables, { gatherMs: 0 })).rejects.toThrow(/injected/);
  await side.h.flush();
  // Re-sent by a meter: refused as duplicates by the API.
  expect(await accepted(400, 600, batch(c.tenant, 100, 150))).toEqual({ accepted: 200, duplicates: 50 });
  await side.h.flush();
  for (const twin of twins) {
    expect(await accepted(0, 0, [{ ...twin, workspace: c.tenant.workspace }])).toEqual({ accepted: 1, duplicates: 0 });
    await side.h.flush();
  }
}

async function mirrorTenant(pg: Pool, of: BillingTenant): Promise<string> {
  await pg.query('INSERT INTO accounts (id, name) VALUES ($1, $2)', [of.accountId, 'bill']);
  await pg.query('INSERT INTO workspaces (id, account_id, name, display_name) VALUES ($1, $2, $3, $3), ($4, $2, $5, $5)', [
    of.workspaceId,
    of.accountId,
    of.workspace,
    `ws-${of.otherWorkspace}`,
    of.otherWorkspace,
  ]);
  const identity = await addIdentity(pg, { accountId: of.accountId, workspaceId: of.workspaceId, role: 'admin', accountAdmin: true, name: 'admin' });
  return identity.apiKey;
}

function serverClient(url: string): ClickHouseClient {
  return createClient({ url, database: DATABASE, clickhouse_settings: CLUSTER_SETTINGS });
}

async function queryServer<T>(url: string, query: string): Promise<T[]> {
  const client = serverClient(url);
  try {
    return await (await client.query({ query, format: 'JSONEachRow' })).json<T>();
  } finally {
    await client.close();
  }
}

/** Every page of a metrics query (following nextCursor). */
async function answers(c: Comparison, side: Side, params: Record<string, string | number | undefined>): Promise<unknown[]> {
  const pages: unknown[] = [];
  let cursor: string | undefined;
  do {
    const res = await side.h.call(side.credential, { method: 'GET', url: metricsUrl(c.tenant.accountId, { ...params, cursor }) });
    expect([res.statusCode, res.body]).toEqual([200, expect.any(String)]);
    const body = res.json() as { meta: { nextCursor: string } };
    pages.push(body);
    cursor = body.meta.nextCursor || undefined;
  } while (cursor);
  return pages;
}

const whole = { startTime: iso(base), endTime: iso(base + 4 * DAY) };
const ragged = { startTime: iso(base + 17 * 60_000), endTime: iso(base + 3 * DAY + 5 * HOUR + 43 * 60_000) };
const OTHER = 'the tenant\'s other workspace';
const queries: Record<string, string | number | undefined>[] = [
  whole,
  { ...whole, resolution: 'daily' },
  { ...whole, resolution: 'weekly' },
  ragged,
  { ...ragged, resolution: 'daily' },
  ...['workspace', 'resource_type', 'resource_name', 'resource_uuid', 'billing_dimension'].flatMap((groupBy) => [
    { ...whole, groupBy },
    { ...ragged, groupBy, resolution: 'daily' },
  ]),
  { ...whole, groupBy: 'workspace,resource_type,billing_dimension' },
  { ...ragged, groupBy: 'resource_name,resource_uuid', limit: 7 },
  { ...whole, groupBy: 'billing_dimension', resourceType: 'sandbox' },
  { ...ragged, groupBy: 'resource_name', workspace: OTHER, resolution: 'daily' },
  { ...whole, groupBy: 'billing_dimension', resourceName: 'res-07' },
];

describe.each([
  { shards: 2, replicas: 1 },
  { shards: 1, replicas: 2 },
  { shards: 2, replicas: 2 },
])('usage on a ClickHouse cluster of $shards shard(s) x $replicas replica(s)', ({ shards, replicas }) => {
  const name = `hangar_${shards}x${replicas}`;
  const pgDatabase = `billing_${name}_${process.pid}_${Date.now()}`;
  const dataDir = path.join(testConfig().dataDir, `ch-${name}-${process.pid}`);
  let cluster: LocalClickHouseCluster;
  let admin: Pool;
  const c = { injectedFailures: 0 } as Comparison;

  beforeAll(async () => {
    fs.rmSync(dataDir, { recursive: true, force: true });
    cluster = await startClickHouseCluster({ dataDir, name, shards, replicas, password: unique('ch'), database: DATABASE });
    admin = new Pool({ connectionString: stack.databaseUrl, max: 1 });
    await admin.query(`CREATE DATABASE ${pgDatabase}`);
    const url = new URL(stack.databaseUrl);
    url.pathname = `/${pgDatabase}`;
    const pool = new Pool({ connectionString: url.toString(), max: 2 });
    await migrate(pool).finally(() => pool.end());
    const migrating = serverClient(cluster.servers[0].url);
    await migrateClickHouse(migrating, DATABASE, name).finally(() => migrating.close());

    const singleHarness = await startBillingHarness();
    c.tenant = await createBillingTenant(singleHarness.pg);
    c.single = { h: singleHarness, credential: c.tenant.admin.apiKey };
    const clusterHarness = await startBillingHarness({ databaseUrl: url.toString(), clickhouseUrl: cluster.servers[0].url, clickhouseDatabase: DATABASE, clickhouseCluster: name });
    c.sharded = { h: clusterHarness, credential: await mirrorTenant(clusterHarness.pg, c.tenant) };
    await ingestPhases(c, c.single);
    await ingestPhases(c, c.sharded);
  }, 300_000);

  afterAll(async () => {
    await c.single?.h.close();
    await c.sharded?.h.close();
    await admin?.query(`DROP DATABASE IF EXISTS ${pgDatabase}`).catch(() => undefined);
    await admin?.end();
    await cluster?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it.each(queries.map((query, i) => [i, query]))('metrics query %i gives the same answer as one server', async (_i, query) => {
    const params = { ...query, workspace: query.workspace === OTHER ? c.tenant.otherWorkspace : query.workspace };
    const expected = await answers(c, c.single, params);
    expect(await answers(c, c.sharded, params)).toEqual(expected);
  });

  it('counts every event once: re-sent ones, and those a retried flush stored twice', async () => {
    expect(c.injectedFailures).toBe(2);
    const [page] = (await answers(c, c.sharded, { ...whole, groupBy: 'billing_dimension', resolution: 'daily' })) as {
      data: { billingDimension: string; summary: { usage: Record<string, number> } }[];
    }[];
    const expected = new Map<string, number>();
    for (const event of [...events, ...twins]) expected.set(event.billingDimension, (expected.get(event.billingDimension) ?? 0) + event.quantity);
    const got = new Map(page.data.map((entry) => [entry.billingDimension, Object.values(entry.summary.usage)[0]]));
    for (const [dimension, quantity] of expected) expect([dimension, got.get(dimension)]).toEqual([dimension, quantity]);
  });

  it('keeps every event, and each re-stored copy, on one shard', async () => {
    const firstReplicas = cluster.servers.filter((server) => server.replica === 1);
    const idsPerShard = await Promise.all(
      firstReplicas.map(async (server) =>
        (await queryServer<{ id: string }>(server.url, `SELECT DISTINCT id FROM ${DATABASE}.usage_events_local WHERE account_id = '${c.tenant.accountId}'`)).map((row) => row.id),
      ),
    );
    // Both shards hold a share.
    for (const ids of idsPerShard) expect(ids.length).toBeGreaterThan(events.length / (2 * shards));
    const all = idsPerShard.flat();
    expect(new Set(all).size).toBe(all.length);
    expect(all.length).toBe(events.length + twins.length);
  });

  if (replicas > 1) {
    it('replicates each shard to its other replicas', async () => {
      const count = (url: string) => queryServer<{ n: string }>(url, `SELECT count() AS n FROM ${DATABASE}.usage_hourly_sums_local`).then((rows) => rows[0].n);
      for (const other of cluster.servers.filter((server) => server.replica > 1)) {
        const first = cluster.servers.find((server) => server.shard === other.shard && server.replica === 1)!;
        const expected = await count(first.url);
        await waitUntilReady('replica', async () => {
          const n = await count(other.url);
          if (n !== expected) throw new Error(`${n} rows of ${expected}`);
        }, { timeoutMs: 60_000, intervalMs: 250 });
      }
    });
  }

  it('migrates idempotently: run again, it changes no table on any server', async () => {
    const schemaOf = (url: string) =>
      queryServer(url, `SELECT name, engine, create_table_query, metadata_modification_time FROM system.tables WHERE database = '${DATABASE}' ORDER BY name`);
    const before = await Promise.all(cluster.servers.map((server) => schemaOf(server.url)));
    expect(before[0]).toHaveLength(10);
    const engines = Object.fromEntries((before[0] as { name: string; engine: string }[]).map((table) => [table.name, table.engine]));
    expect([engines.usage_events, engines.usage_events_local, engines.usage_daily_sums_local]).toEqual(
      replicas > 1 ? ['Distributed', 'ReplicatedReplacingMergeTree', 'ReplicatedSummingMergeTree'] : ['Distributed', 'ReplacingMergeTree', 'SummingMergeTree'],
    );
    const client = serverClient(cluster.servers[cluster.servers.length - 1].url);
    await migrateClickHouse(client, DATABASE, name).finally(() => client.close());
    expect(await Promise.all(cluster.servers.map((server) => schemaOf(server.url)))).toEqual(before);
  });

  it('refuses to shard a database whose usage tables were made for a single server, naming the variable', async () => {
    const client = serverClient(cluster.servers[0].url);
    try {
      await migrateClickHouse(client, 'single_before', undefined);
      await expect(migrateClickHouse(client, 'single_before', name)).rejects.toThrow(
        /CLICKHOUSE_CLUSTER is '.*', but single_before\.usage_\w+ is a single-server table/,
      );
    } finally {
      await client.command({ query: 'DROP DATABASE IF EXISTS single_before' }).catch(() => undefined);
      await client.close();
    }
  });

  it('stops start-up naming CLICKHOUSE_CLUSTER when the servers do not define that cluster', async () => {
    const config = loadConfig({
      HANGAR_DATA_DIR: path.join(dataDir, 'prepare'),
      DATABASE_URL: stack.databaseUrl,
      CLICKHOUSE_URL: cluster.servers[0].url,
      CLICKHOUSE_DATABASE: DATABASE,
      CLICKHOUSE_CLUSTER: 'no_such_cluster',
      TEMPORAL_ADDRESS: stack.temporalAddress,
    });
    await expect(prepare(config, () => undefined)).rejects.toThrow(new RegExp(`CLICKHOUSE_CLUSTER is 'no_such_cluster'.*${name}`));
  });
});

it('refuses a CLICKHOUSE_CLUSTER that is no plain name, naming the variable', () => {
  expect(() => loadConfig({ CLICKHOUSE_CLUSTER: 'x; DROP' })).toThrow(/CLICKHOUSE_CLUSTER must name a cluster/);
});
