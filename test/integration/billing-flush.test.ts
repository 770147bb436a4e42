import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'pg';
import { createUsageActivities, startUsageFlush } from '../../activities/usage';
import { recordUsage } from '../../activities/usage-metering';
import { acceptUsageEvents, UsageConflict } from '../../activities/usage-outbox';
import { parseUsageEvents } from '../../core/billing/usage-events';
import { usageTables } from '../../core/billing/storage';
import { migrateClickHouse } from '../../db/clickhouse';
import { migrate } from '../../db/migrate';
import { startLocalClickHouse } from '../../scripts/stack/clickhouse';
import type { StartedService } from '../../scripts/stack/local-service';
import { testConfig } from '../helpers/platform';
import { testStack } from '../setup/stack';
import { createBillingTenant, ingest, metricsUrl, startBillingHarness, type BillingHarness } from './billing-helpers';

jest.setTimeout(120_000);

const iso = (ms: number) => new Date(ms).toISOString();
const HOUR = 3_600_000;
const base = Date.parse('2026-02-10T00:00:00Z');

describe('a flush retried after ClickHouse already took its rows', () => {
  let h: BillingHarness;
  beforeAll(async () => {
    h = await startBillingHarness();
  });
  afterAll(() => h.close());

  it('counts every event once', async () => {
    const t = await createBillingTenant(h.pg);
    const events = Array.from({ length: 50 }, (_, i) => ({
      id: `r-${i}`,
      timestamp: iso(base + (i % 30) * HOUR + i * 1000),
      workspace: t.workspace,
      resourceType: 'job',
      resourceName: `job-${i % 4}`,
      billingDimension: 'job_compute_runtime_gbs',
      quantity: 10,
    }));
    expect((await ingest(h, t, events)).statusCode).toBe(202);
    // What a crash between the ClickHouse insert and the outbox delete leaves behind: the same
    // outbox rows once more after ClickHouse has their events.
    const pending = await h.pg.query('SELECT account_id, event_count, hours, tsv FROM usage_outbox WHERE account_id = $1', [t.accountId]);
    await h.flush();
    for (const row of pending.rows) {
      await h.pg.query('INSERT INTO usage_outbox (account_id, event_count, hours, tsv) VALUES ($1, $2, $3, $4)', [
        row.account_id,
        row.event_count,
        row.hours,
        row.tsv,
      ]);
    }
    await h.flush();

    const stored = await h.clickhouse.query({
      query: `SELECT count() AS n FROM ${h.tables.raw} WHERE account_id = '${t.accountId}'`,
      format: 'JSONEachRow',
    });
    const [{ n }] = await stored.json<{ n: string }>();
    // Unless a merge already collapsed them, the raw table now holds every row twice...
    expect([50, 100]).toContain(Number(n));
    const cost = async (params: Record<string, string>) =>
      (
        await h.call(t.admin.apiKey, {
          method: 'GET',
          url: metricsUrl(t.accountId, { startTime: iso(base - HOUR / 2), endTime: iso(base + 40 * HOUR), ...params }),
        })
      ).json().summary.totalCost;
    // ... and every read path (raw edges, hourly, daily) still counts it once: 50 x 10 GB-s x 0.0000069 USD.
    expect(await cost({ resolution: 'hourly' })).toBe(0.00345);
    expect(await cost({ resolution: 'daily' })).toBe(0.00345);
    expect(await cost({ resolution: 'daily', startTime: iso(base), endTime: iso(base + 2 * 24 * HOUR) })).toBe(0.00345);
  });

  it('flushes outbox rows written before TabSeparated, as JSONEachRow, beside new ones', async () => {
    const t = await createBillingTenant(h.pg);
    const at = base + 5 * HOUR;
    // As earlier versions wrote them: decimals as bare numbers at the column's scale.
    const legacy = ['old-1', 'old-2'].map(
      (id, i) =>
        `{"account_id":"${t.accountId}","id":"${id}","event_time":${at / 1000 + i},"workspace":"${t.workspace}","resource_type":"job",` +
        `"resource_name":"job-legacy","resource_uuid":"","billing_dimension":"job_compute_runtime_gbs","quantity":4.000000000,"cost":0.000027600}`,
    );
    await h.pg.query('INSERT INTO usage_outbox (account_id, event_count, hours, rows) VALUES ($1, 2, $2, $3)', [t.accountId, [at / 1000], legacy.join('\n')]);
    const fresh = { id: 'new-1', timestamp: iso(at + 10_000), workspace: t.workspace, resourceType: 'job', resourceName: 'job-legacy', billingDimension: 'job_compute_runtime_gbs', quantity: 4 };
    expect((await ingest(h, t, [fresh])).statusCode).toBe(202);
    await h.flush();

    const stored = await h.clickhouse.query({
      query: `SELECT id, toString(cost) AS cost FROM ${h.tables.raw} FINAL WHERE account_id = '${t.accountId}' ORDER BY id`,
      format: 'JSONEachRow',
    });
    expect(await stored.json()).toEqual([
      { id: 'new-1', cost: '0.000027600' },
      { id: 'old-1', cost: '0.000027600' },
      { id: 'old-2', cost: '0.000027600' },
    ]);
    expect((await h.pg.query('SELECT count(*)::int AS n FROM usage_outbox WHERE account_id = $1', [t.accountId])).rows[0].n).toBe(0);
  });
});

/**
 * The outage test runs on its own PostgreSQL database and its own ClickHouse server, so that
 * stopping ClickHouse and flushing cannot disturb (or be disturbed by) other test files.
 */
describe('a period rebuilt while its earlier snapshot is still stored', () => {
  let h: BillingHarness;
  beforeAll(async () => {
    h = await startBillingHarness();
  });
  afterAll(() => h.close());

  it('is read from its latest snapshot only, in every rollup', async () => {
    const t = await createBillingTenant(h.pg);
    const rollups = [h.tables.hourly, h.tables.hourlyDims, h.tables.daily, h.tables.dailyDims];
    const at = base + 10 * HOUR;
    const event = (id: string, quantity: number) => ({
      id,
      timestamp: iso(at + 60_000),
      workspace: t.workspace,
      resourceType: 'job',
      resourceName: 'job-twice',
      billingDimension: 'job_compute_runtime_gbs',
      quantity,
    });
    // Without merges the snapshots of both flushes stay side by side, as they do until a merge.
    for (const table of rollups) await h.clickhouse.command({ query: `SYSTEM STOP MERGES ${table}` });
    try {
      expect((await ingest(h, t, [event('s-1', 100)])).statusCode).toBe(202);
      await h.flush();
      expect((await ingest(h, t, [event('s-2', 200)])).statusCode).toBe(202);
      await h.flush();
      for (const table of rollups) {
        const versions = await h.clickhouse.query({ query: `SELECT uniqExact(version) AS n FROM ${table} WHERE account_id = '${t.accountId}'`, format: 'JSONEachRow' });
        expect(await versions.json()).toEqual([{ n: '2' }]);
      }
      const read = async (params: Record<string, string>) =>
        (await h.call(t.admin.apiKey, { method: 'GET', url: metricsUrl(t.accountId, params) })).json();
      // 300 GB-s x 0.0000069 USD, the second snapshot's total, whichever table answers.
      const expected = 0.00207;
      const hourly = await read({ startTime: iso(at), endTime: iso(at + HOUR), resolution: 'hourly', groupBy: 'resource_name' });
      expect(hourly.data.map((entry: { summary: { cost: number } }) => entry.summary.cost)).toEqual([expected]);
      const dims = await read({ startTime: iso(at), endTime: iso(at + HOUR), resolution: 'hourly', groupBy: 'billing_dimension' });
      expect(dims.summary.totalCost).toBe(expected);
      const daily = await read({ startTime: iso(base), endTime: iso(base + 24 * HOUR), resolution: 'daily', groupBy: 'resource_name' });
      expect(daily.data.map((entry: { summary: { cost: number } }) => entry.summary.cost)).toEqual([expected]);
      const dailyDims = await read({ startTime: iso(base), endTime: iso(base + 24 * HOUR), resolution: 'daily' });
      expect(dailyDims.summary.totalCost).toBe(expected);
    } finally {
      for (const table of rollups) await h.clickhouse.command({ query: `SYSTEM START MERGES ${table}` });
    }
  });
});

describe('an hour still open', () => {
  let h: BillingHarness;
  beforeAll(async () => {
    h = await startBillingHarness();
  });
  afterAll(() => h.close());

  it('is read from the raw table until it closes, then from rollups built once, with the same answers', async () => {
    const t = await createBillingTenant(h.pg);
    const now = Date.now();
    const hour = Math.floor(now / HOUR) * HOUR;
    const events = [1, 2, 3].map((i) => ({
      id: `open-${i}`,
      timestamp: iso(now - 62_000),
      workspace: t.workspace,
      resourceType: 'job',
      resourceName: `job-${i % 2}`,
      billingDimension: 'job_compute_runtime_gbs',
      quantity: 100,
    }));
    expect((await ingest(h, t, events)).statusCode).toBe(202);
    await h.flush();

    const pending = async () => (await h.pg.query('SELECT hour::float8 AS hour FROM usage_pending_rollups WHERE account_id = $1', [t.accountId])).rows;
    const rollupRows = async () => {
      const result = await h.clickhouse.query({ query: `SELECT count() AS n FROM ${h.tables.hourly} WHERE account_id = '${t.accountId}'`, format: 'JSONEachRow' });
      return Number((await result.json<{ n: string }>())[0].n);
    };
    const answers = async () => {
      const read = async (params: Record<string, string>) => (await h.call(t.admin.apiKey, { method: 'GET', url: metricsUrl(t.accountId, params) })).json();
      const dayStart = Math.floor(now / (24 * HOUR)) * 24 * HOUR;
      return [
        await read({ startTime: iso(hour - HOUR), endTime: iso(hour + HOUR), resolution: 'hourly', groupBy: 'resource_name' }),
        await read({ startTime: iso(dayStart - 24 * HOUR), endTime: iso(dayStart + 24 * HOUR), resolution: 'daily', groupBy: 'billing_dimension' }),
      ];
    };
    const rowsHour = Math.floor((now - 62_000) / HOUR) * HOUR;
    // Open: its events are in ClickHouse, no rollup was built, and reads take them raw.
    expect(await pending()).toEqual([{ hour: rowsHour / 1000 }]);
    expect(await rollupRows()).toBe(0);
    const whileOpen = await answers();
    // 300 GB-s x 0.0000069 USD.
    expect(whileOpen.map((answer) => answer.summary.totalCost)).toEqual([0.00207, 0.00207]);

    // Two hours later (the flush runs with nothing to move), the hour is built once and forgotten.
    await h.flush(now + 2 * HOUR);
    expect(await pending()).toEqual([]);
    expect(await rollupRows()).toBe(2);
    expect(await answers()).toEqual(whileOpen);
  });
});

describe('ClickHouse down', () => {
  const stack = testStack();
  const config = testConfig();
  const dbName = `billing_outage_${process.pid}_${Date.now()}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-billing-ch-'));
  const database = 'outage';
  let admin: Pool;
  let pool: Pool;
  let chService: StartedService | undefined;
  let chUrl = '';
  let clickhouse: ClickHouseClient;
  let httpPort = 0;
  let tcpPort = 0;
  const password = 'outage-test';

  const startClickHouse = async () => {
    const started = await startLocalClickHouse(
      { dataDir, httpPort, tcpPort, password, database },
      { log: () => undefined, bindToParent: true, reuseRunning: false, readyTimeoutMs: 60_000 },
    );
    chService = started.service;
    chUrl = started.url;
  };

  beforeAll(async () => {
    [httpPort, tcpPort] = await Promise.all([freePort(), freePort()]);
    admin = new Pool({ connectionString: stack.databaseUrl, max: 1 });
    await admin.query(`CREATE DATABASE ${dbName}`);
    const url = new URL(stack.databaseUrl);
    url.pathname = `/${dbName}`;
    pool = new Pool({ connectionString: url.toString(), max: 6 });
    await migrate(pool);
    await startClickHouse();
    clickhouse = createClient({ url: chUrl, request_timeout: 10_000, log: { level: ClickHouseLogLevel.OFF } });
    await migrateClickHouse(clickhouse, database);
  });

  afterAll(async () => {
    await clickhouse?.close();
    await chService?.stop();
    await pool?.end();
    await admin?.query(`DROP DATABASE IF EXISTS ${dbName}`).catch(() => undefined);
    await admin?.end();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps accepting, loses nothing and counts once when ClickHouse is back', async () => {
    await pool.query("INSERT INTO accounts (id, name) VALUES ('acc-out', 'outage')");
    await pool.query("INSERT INTO workspaces (id, account_id, name, display_name) VALUES ('ws-out', 'acc-out', 'prod', 'prod')");
    await pool.query("INSERT INTO billing_account_prices VALUES ('acc-out', 'volume_storage_gbs', 0.000001)");

    const taskQueue = `usage-flush-test-${process.pid}-${Date.now()}`;
    const workflowId = `usage-flush-${taskQueue}`;
    const connection = await NativeConnection.connect({ address: stack.temporalAddress });
    const worker = await Worker.create({
      connection,
      namespace: config.temporalNamespace,
      taskQueue,
      workflowsPath: require.resolve('../../workflows/usage-flush'),
      activities: createUsageActivities({ pg: pool, clickhouse, config: { ...config, clickhouseDatabase: database } }),
    });
    const running = worker.run();
    const clientConnection = await Connection.connect({ address: stack.temporalAddress });
    const client = new Client({ connection: clientConnection, namespace: config.temporalNamespace });
    try {
      await startUsageFlush(client, taskQueue, { workflowId, idleMs: 200 });

      await chService!.stop();
      // Ingestion needs only PostgreSQL: external events and metering ticks are accepted.
      const external = parseUsageEvents(
        {
          events: Array.from({ length: 300 }, (_, i) => ({
            id: `out-${i}`,
            timestamp: iso(base + i * 60_000),
            workspace: 'prod',
            resourceType: 'volume',
            resourceName: 'data',
            billingDimension: 'volume_storage_gbs',
            quantity: 100,
          })),
        },
        Date.now(),
      );
      expect(await acceptUsageEvents(pool, 'acc-out', external)).toEqual({ accepted: 300, duplicates: 0 });
      const tick = {
        accountId: 'acc-out',
        workspace: 'prod',
        resourceType: 'sandbox' as const,
        resourceName: 'web',
        resourceUuid: 'u-web',
        billingDimension: 'sandbox_compute_runtime_gbs' as const,
        quantity: 60,
        periodStart: new Date(base),
      };
      expect(await recordUsage(pool, tick)).toEqual({ accepted: 1, duplicates: 0 });
      // A retried tick is the same event; the same tick with another quantity is a conflict.
      expect(await recordUsage(pool, tick)).toEqual({ accepted: 0, duplicates: 1 });
      await expect(recordUsage(pool, { ...tick, quantity: 61 })).rejects.toBeInstanceOf(UsageConflict);

      // The flush fails and retries while ClickHouse is down; the events wait in the outbox.
      const handle = client.workflow.getHandle(workflowId);
      await waitFor(async () => {
        const pending = (await handle.describe()).raw.pendingActivities ?? [];
        return (pending[0]?.attempt ?? 0) >= 2;
      }, 30_000);
      const waiting = await pool.query('SELECT coalesce(sum(event_count), 0)::int AS n FROM usage_outbox');
      expect(waiting.rows[0].n).toBe(301);

      await startClickHouse();
      const tables = usageTables(database);
      const totals = async () => {
        const result = await clickhouse.query({
          query: `SELECT count() AS events, toString(sum(cost)) AS cost FROM ${tables.raw} FINAL WHERE account_id = 'acc-out'`,
          format: 'JSONEachRow',
        });
        return (await result.json<{ events: string; cost: string }>())[0];
      };
      await waitFor(async () => Number((await totals().catch(() => ({ events: '0' }))).events) === 301, 60_000);
      // 300 x 100 GB-s at the account's 0.000001 USD, plus 60 GB-s at 0.0000083 USD.
      expect(await totals()).toEqual({ events: '301', cost: '0.030498000' });
      await waitFor(async () => (await pool.query('SELECT count(*)::int AS n FROM usage_outbox')).rows[0].n === 0, 10_000);
      const hourly = await clickhouse.query({
        query: `SELECT toString(sum(cost)) AS cost FROM ${tables.hourly} FINAL WHERE account_id = 'acc-out'`,
        format: 'JSONEachRow',
      });
      expect(await hourly.json()).toEqual([{ cost: '0.030498000' }]);
    } finally {
      await client.workflow.getHandle(workflowId).terminate('test over').catch(() => undefined);
      worker.shutdown();
      await running;
      await clientConnection.close();
      await connection.close();
    }
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
