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
import { startClickHouseCluster, type LocalClickHouseCluster } from '../../helpers/clickhouse-cluster';
import { addIdentity, testConfig, unique } from '../../helpers/platform';
import { testStack } from '../../setup/stack';
import { createBillingTenant, metricsUrl, startBillingHarness, type BillingHarness, type BillingTenant, type EventInput } from './helpers';

/**
 * The usage schema on a two-shard ClickHouse cluster (CLICKHOUSE_CLUSTER) against the test
 * stack's single server: the same events, through the same API and flush (a retried flush
 * storing a batch twice included), give the same answers to every metrics query.
 */
const CLUSTER = 'hangar_test';
const DATABASE = 'hangar';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const base = Date.parse('2026-03-02T00:00:00Z'); // a Monday
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

/** One deployment under test: its app, and the tenant (the same ids and names on both). */
interface Side {
  h: BillingHarness;
  credential: string;
}

jest.setTimeout(60_000);

const stack = testStack();
const pgDatabase = `billing_cluster_${process.pid}_${Date.now()}`;
const dataDir = path.join(testConfig().dataDir, `ch-cluster-${process.pid}`);
let cluster: LocalClickHouseCluster;
let admin: Pool;
let tenant: BillingTenant;
let single: Side;
let sharded: Side;
const events = generateEvents();
let injectedFailures = 0;

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

const workspaceOf = (index: number) => (index % 3 === 0 ? tenant.otherWorkspace : tenant.workspace);
const batch = (from: number, to: number) => events.slice(from, to).map((event, i) => ({ ...event, workspace: workspaceOf(from + i) }));

/** The ClickHouse client of `h` failing once, on the first rollup insert: the raw rows of that batch are stored, the rest is not. */
function failingOnceAfterRaw(h: BillingHarness): ClickHouseClient {
  let failed = false;
  return new Proxy(h.clickhouse, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (property !== 'command') return typeof value === 'function' ? value.bind(target) : value;
      return async (params: { query: string }) => {
        if (!failed && params.query.startsWith(`INSERT INTO ${h.tables.hourly} `)) {
          failed = true;
          injectedFailures++;
          throw new Error('injected: the flush dies after storing the raw events');
        }
        return target.command(params);
      };
    },
  });
}

/** Ingests through the API and flushes as the platform does: phase by phase, the same on both sides. */
async function ingestPhases(side: Side): Promise<void> {
  const accepted = async (from: number, to: number, extra: EventInput[] = []) => {
    const res = await side.h.call(side.credential, { method: 'POST', url: `/v0/accounts/${tenant.accountId}/usage-events`, payload: { events: [...batch(from, to), ...extra] } });
    expect(res.statusCode).toBe(202);
    return res.json() as { accepted: number; duplicates: number };
  };
  expect(await accepted(0, 200)).toEqual({ accepted: 200, duplicates: 0 });
  await side.h.flush();
  // A flush that dies part way and is retried stores this batch's raw events twice.
  expect(await accepted(200, 400)).toEqual({ accepted: 200, duplicates: 0 });
  await expect(flushUsageOutbox(side.h.pg, failingOnceAfterRaw(side.h), side.h.tables, { gatherMs: 0 })).rejects.toThrow(/injected/);
  await side.h.flush();
  // Re-sent by a meter: refused as duplicates by the API.
  expect(await accepted(400, 600, batch(100, 150))).toEqual({ accepted: 200, duplicates: 50 });
  await side.h.flush();
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

beforeAll(async () => {
  fs.rmSync(dataDir, { recursive: true, force: true });
  cluster = await startClickHouseCluster({ dataDir, name: CLUSTER, shards: 2, replicas: 1, password: unique('ch'), database: DATABASE });
  admin = new Pool({ connectionString: stack.databaseUrl, max: 1 });
  await admin.query(`CREATE DATABASE ${pgDatabase}`);
  const url = new URL(stack.databaseUrl);
  url.pathname = `/${pgDatabase}`;
  const pool = new Pool({ connectionString: url.toString(), max: 2 });
  await migrate(pool).finally(() => pool.end());
  const migrating = serverClient(cluster.servers[0].url);
  await migrateClickHouse(migrating, DATABASE, CLUSTER).finally(() => migrating.close());

  const singleHarness = await startBillingHarness();
  tenant = await createBillingTenant(singleHarness.pg);
  single = { h: singleHarness, credential: tenant.admin.apiKey };
  const shardedHarness = await startBillingHarness({
    databaseUrl: url.toString(),
    clickhouseUrl: cluster.servers[0].url,
    clickhouseDatabase: DATABASE,
    clickhouseCluster: CLUSTER,
  });
  sharded = { h: shardedHarness, credential: await mirrorTenant(shardedHarness.pg, tenant) };
  await ingestPhases(single);
  await ingestPhases(sharded);
}, 300_000);

afterAll(async () => {
  await single?.h.close();
  await sharded?.h.close();
  await admin?.query(`DROP DATABASE IF EXISTS ${pgDatabase}`).catch(() => undefined);
  await admin?.end();
  await cluster?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

async function answers(side: Side, params: Record<string, string | number | undefined>): Promise<unknown[]> {
  const pages: unknown[] = [];
  let cursor: string | undefined;
  do {
    const res = await side.h.call(side.credential, { method: 'GET', url: metricsUrl(tenant.accountId, { ...params, cursor }) });
    expect([res.statusCode, res.body]).toEqual([200, expect.any(String)]);
    const body = res.json() as { meta: { nextCursor: string } };
    pages.push(body);
    cursor = body.meta.nextCursor || undefined;
  } while (cursor);
  return pages;
}

describe('usage on a two-shard ClickHouse cluster', () => {
  const whole = { startTime: iso(base), endTime: iso(base + 4 * DAY) };
  const ragged = { startTime: iso(base + 17 * 60_000), endTime: iso(base + 3 * DAY + 5 * HOUR + 43 * 60_000) };
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
    { ...ragged, groupBy: 'resource_name', workspace: 'OTHER', resolution: 'daily' },
    { ...whole, groupBy: 'billing_dimension', resourceName: 'res-07' },
  ];

  it.each(queries.map((query, i) => [i, query]))('query %i gives the same answer as one server', async (_i, query) => {
    const params = { ...query, workspace: query.workspace === 'OTHER' ? tenant.otherWorkspace : query.workspace };
    const expected = await answers(single, params);
    expect(await answers(sharded, params)).toEqual(expected);
  });

  it('counts every event once: re-sent ones, and those a retried flush stored twice', async () => {
    expect(injectedFailures).toBe(2);
    const [page] = (await answers(sharded, { ...whole, groupBy: 'billing_dimension', resolution: 'daily' })) as {
      data: { billingDimension: string; summary: { usage: Record<string, number> } }[];
    }[];
    const expected = new Map<string, number>();
    for (const event of events) expected.set(event.billingDimension, (expected.get(event.billingDimension) ?? 0) + event.quantity);
    const got = new Map(page.data.map((entry) => [entry.billingDimension, Object.values(entry.summary.usage)[0]]));
    for (const [dimension, quantity] of expected) expect([dimension, got.get(dimension)]).toEqual([dimension, quantity]);
  });

  it('keeps every event, and each re-stored copy, on one shard, with both shards holding data', async () => {
    const idsPerShard = await Promise.all(
      cluster.servers.map(async (server) => {
        const client = serverClient(server.url);
        try {
          const result = await client.query({
            query: `SELECT id, count() AS copies FROM ${DATABASE}.usage_events_local WHERE account_id = '${tenant.accountId}' GROUP BY id`,
            format: 'JSONEachRow',
          });
          return (await result.json<{ id: string }>()).map((row) => row.id);
        } finally {
          await client.close();
        }
      }),
    );
    for (const ids of idsPerShard) expect(ids.length).toBeGreaterThan(100);
    const all = idsPerShard.flat();
    // No id on two shards, none missing.
    expect(new Set(all).size).toBe(all.length);
    expect(all.length).toBe(events.length);
  });
});

describe('the migration on a cluster', () => {
  const schemaOf = async (url: string) => {
    const client = serverClient(url);
    try {
      const result = await client.query({
        query: `SELECT name, engine, create_table_query, metadata_modification_time FROM system.tables WHERE database = '${DATABASE}' ORDER BY name`,
        format: 'JSONEachRow',
      });
      return await result.json();
    } finally {
      await client.close();
    }
  };

  it('is idempotent: run again, it changes no table on any server', async () => {
    const before = await Promise.all(cluster.servers.map((server) => schemaOf(server.url)));
    expect(before[0]).toHaveLength(10);
    const client = serverClient(cluster.servers[1].url);
    await migrateClickHouse(client, DATABASE, CLUSTER).finally(() => client.close());
    expect(await Promise.all(cluster.servers.map((server) => schemaOf(server.url)))).toEqual(before);
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
    await expect(prepare(config, () => undefined)).rejects.toThrow(/CLICKHOUSE_CLUSTER is 'no_such_cluster'.*hangar_test/);
  });

  it('refuses a CLICKHOUSE_CLUSTER that is no plain name, naming the variable', () => {
    expect(() => loadConfig({ CLICKHOUSE_CLUSTER: 'x; DROP' })).toThrow(/CLICKHOUSE_CLUSTER must name a cluster/);
  });
});
