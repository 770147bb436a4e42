import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'pg';
import { Readable } from 'node:stream';
import { createUsageActivities, flushUsageOutbox } from '../../../activities/usage-flush';
import { startUsageFlush } from '../../../workers/singletons';
import { recordUsage } from '../../../activities/usage-metering';
import { acceptUsageEvents, UsageConflict } from '../../../store/usage-outbox';
import { parseUsageEvents } from '../../../domain/billing/usage-events';
import { usageTables } from '../../../domain/billing/storage';
import { migrateClickHouse } from '../../../store/clickhouse-schema';
import { startLocalClickHouse } from '../../../scripts/stack/clickhouse';
import type { StartedService } from '../../../scripts/stack/local-service';
import { testConfig } from '../../helpers/platform';
import { scratchDatabase, type ScratchDatabase } from '../../helpers/scratch-database';
import { freePort } from '../../helpers/ports';
import { eventually } from '../../helpers/workers';
import { testStack } from '../../setup/stack';
import { createBillingTenant, ingest, metricsUrl, startBillingHarness, type BillingHarness, type BillingTenant } from './helpers';

jest.setTimeout(120_000);

const iso = (ms: number) => new Date(ms).toISOString();
const HOUR = 3_600_000;
const base = Date.parse('2026-02-10T00:00:00Z');

// One app for the tests that use the shared test stack.
let h: BillingHarness;
beforeAll(async () => {
  h = await startBillingHarness();
});
afterAll(() => h.close());

/** What each rollup holds for an account: rows (unmerged ones apart), summed cost and events. */
async function rollupContents(h: BillingHarness, accountId: string) {
  const contents: Record<string, { rows: string; cost: string; events: string }> = {};
  for (const table of [h.tables.hourly, h.tables.hourlyDims, h.tables.daily, h.tables.dailyDims]) {
    const result = await h.clickhouse.query({
      query: `SELECT count() AS rows, toString(sum(cost)) AS cost, toString(sum(events)) AS events FROM ${table} WHERE account_id = '${accountId}'`,
      format: 'JSONEachRow',
    });
    contents[table] = (await result.json<{ rows: string; cost: string; events: string }>())[0];
  }
  return contents;
}

async function withMergesStopped(h: BillingHarness, run: () => Promise<void>): Promise<void> {
  const rollups = [h.tables.hourly, h.tables.hourlyDims, h.tables.daily, h.tables.dailyDims];
  for (const table of rollups) await h.clickhouse.command({ query: `SYSTEM STOP MERGES ${table}` });
  try {
    await run();
  } finally {
    for (const table of rollups) await h.clickhouse.command({ query: `SYSTEM START MERGES ${table}` });
  }
}

/** Total cost of the account's window as each read path answers it (raw edges, hourly, daily, dims). */
async function readPaths(h: BillingHarness, t: BillingTenant, from: number, to: number): Promise<number[]> {
  const cost = async (params: Record<string, string>) =>
    (await h.call(t.admin.apiKey, { method: 'GET', url: metricsUrl(t.accountId, { startTime: iso(from), endTime: iso(to), ...params }) })).json().summary.totalCost;
  return [
    await cost({ resolution: 'hourly', groupBy: 'resource_name' }),
    await cost({ resolution: 'hourly' }),
    await cost({ resolution: 'daily', groupBy: 'resource_name' }),
    await cost({ resolution: 'daily', startTime: iso(from - HOUR / 2) }),
  ];
}

/** `target` whose `methods` reject, for a query matching `pattern`, as a failing server would. */
function failingOn<T extends object>(target: T, methods: string[], pattern: RegExp): T {
  return new Proxy(target, {
    get(object, property) {
      const value = Reflect.get(object, property, object);
      if (typeof value !== 'function') return value;
      if (!methods.includes(String(property))) return value.bind(object);
      return (first: unknown, ...rest: unknown[]) => {
        const text = typeof first === 'string' ? first : (first as { query?: string }).query;
        if (text && pattern.test(text)) return Promise.reject(new Error(`injected failure: ${text.slice(0, 40)}`));
        return value.call(object, first, ...rest);
      };
    },
  });
}

/** A pool whose connections fail on statements matching `pattern`. */
function poolFailingOn(pool: Pool, pattern: RegExp): Pool {
  const wrapped = failingOn(pool, ['query'], pattern);
  return new Proxy(wrapped, {
    get(object, property) {
      if (property !== 'connect') return Reflect.get(object, property, object);
      return async () => failingOn(await pool.connect(), ['query'], pattern);
    },
  });
}

describe('a flush that fails part way', () => {

  // Where the failure strikes: ClickHouse has the raw events only; some rollups too; or all of it
  // without the outbox knowing (a crash before the delete).
  const failures: [string, (h: BillingHarness) => { pg: Pool; clickhouse: ClickHouseClient }][] = [
    ['before any rollup', (h) => ({ pg: h.pg, clickhouse: failingOn(h.clickhouse, ['command', 'exec'], /^INSERT INTO \S+\.usage_hourly_sums /) })],
    ['between rollups', (h) => ({ pg: h.pg, clickhouse: failingOn(h.clickhouse, ['command', 'exec'], /^INSERT INTO \S+\.usage_daily_sums /) })],
    ['after ClickHouse took all, before the outbox delete', (h) => ({ pg: poolFailingOn(h.pg, /^DELETE FROM usage_outbox/), clickhouse: h.clickhouse })],
  ];

  it.each(failures)('%s: the retry counts every event once, in every table and read path', async (_, failing) => {
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
    const broken = failing(h);
    await expect(flushUsageOutbox(broken.pg, broken.clickhouse, h.tables, { gatherMs: 0 })).rejects.toThrow(/injected failure/);
    // The events are still in the outbox, and their hours are read raw meanwhile.
    expect((await h.pg.query('SELECT sum(event_count)::int AS n FROM usage_outbox WHERE account_id = $1', [t.accountId])).rows[0].n).toBe(50);
    const pending = async () => (await h.pg.query('SELECT count(*)::int AS n FROM usage_pending_rollups WHERE account_id = $1', [t.accountId])).rows[0].n;
    expect(await pending()).toBe(30);
    // 50 x 10 GB-s x 0.0000069 USD, whatever ClickHouse holds already.
    expect(await readPaths(h, t, base, base + 2 * 24 * HOUR)).toEqual([0.00345, 0.00345, 0.00345, 0.00345]);

    await h.flush();
    expect(await pending()).toBe(0);
    expect((await h.pg.query('SELECT count(*)::int AS n FROM usage_outbox WHERE account_id = $1', [t.accountId])).rows[0].n).toBe(0);
    const contents = await rollupContents(h, t.accountId);
    for (const table of Object.keys(contents)) expect([table, contents[table].cost, contents[table].events]).toEqual([table, '0.003450000', '50']);
    expect(await readPaths(h, t, base, base + 2 * 24 * HOUR)).toEqual([0.00345, 0.00345, 0.00345, 0.00345]);

    // A correction of hours already right adds nothing (no merge may change the rows meanwhile).
    await withMergesStopped(h, async () => {
      const before = await rollupContents(h, t.accountId);
      await h.pg.query('INSERT INTO usage_pending_rollups (account_id, hour, reconcile) SELECT $1, unnest($2::bigint[]), true', [
        t.accountId,
        Array.from({ length: 30 }, (_, i) => (base + i * HOUR) / 1000),
      ]);
      await h.flush();
      expect(await rollupContents(h, t.accountId)).toEqual(before);
    });
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
    const contents = await rollupContents(h, t.accountId);
    for (const table of Object.keys(contents)) expect([table, contents[table].cost, contents[table].events]).toEqual([table, '0.000082800', '3']);
  });
});

describe('rollup rows of one period written by several flushes, before any merge', () => {

  it('are all summed, in every rollup', async () => {
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
    // Without merges the rows of both flushes stay side by side, as they do until a merge.
    await withMergesStopped(h, async () => {
      expect((await ingest(h, t, [event('s-1', 100)])).statusCode).toBe(202);
      await h.flush();
      expect((await ingest(h, t, [event('s-2', 200)])).statusCode).toBe(202);
      await h.flush();
      const contents = await rollupContents(h, t.accountId);
      for (const table of rollups) expect([table, contents[table]]).toEqual([table, { rows: '2', cost: '0.002070000', events: '2' }]);
      const read = async (params: Record<string, string>) =>
        (await h.call(t.admin.apiKey, { method: 'GET', url: metricsUrl(t.accountId, params) })).json();
      // 300 GB-s x 0.0000069 USD, both flushes' events, whichever table answers.
      const expected = 0.00207;
      const hourly = await read({ startTime: iso(at), endTime: iso(at + HOUR), resolution: 'hourly', groupBy: 'resource_name' });
      expect(hourly.data.map((entry: { summary: { cost: number } }) => entry.summary.cost)).toEqual([expected]);
      const dims = await read({ startTime: iso(at), endTime: iso(at + HOUR), resolution: 'hourly', groupBy: 'billing_dimension' });
      expect(dims.summary.totalCost).toBe(expected);
      const daily = await read({ startTime: iso(base), endTime: iso(base + 24 * HOUR), resolution: 'daily', groupBy: 'resource_name' });
      expect(daily.data.map((entry: { summary: { cost: number } }) => entry.summary.cost)).toEqual([expected]);
      const dailyDims = await read({ startTime: iso(base), endTime: iso(base + 24 * HOUR), resolution: 'daily' });
      expect(dailyDims.summary.totalCost).toBe(expected);
    });
  });
});

describe('raw events stored before the rollups were sums', () => {

  it('are read raw, then filled into the rollups by the next flush (usage_rollup_backfill)', async () => {
    const t = await createBillingTenant(h.pg);
    // As an earlier release left them: in the raw table (one twice), with no rollup rows.
    const row = (id: string, hour: number) =>
      `${t.accountId}\t${id}\t${(base + hour * HOUR) / 1000 + 60}\t${t.workspace}\tjob\tjob-old\t\tjob_compute_runtime_gbs\t10\t0.000069\n`;
    const rows = [row('b-1', 1), row('b-2', 1), row('b-3', 30), row('b-3', 30)].join('');
    const insert = await h.clickhouse.exec({ query: `INSERT INTO ${h.tables.raw} FORMAT TabSeparated`, values: Readable.from([Buffer.from(rows)]) });
    await new Promise((resolve, reject) => insert.stream.on('end', resolve).on('error', reject).resume());
    await h.pg.query('INSERT INTO usage_rollup_backfill DEFAULT VALUES ON CONFLICT DO NOTHING');
    await h.pg.query('INSERT INTO usage_pending_rollups (account_id, hour, reconcile) VALUES ($1, $2, true) ON CONFLICT DO NOTHING', [t.accountId, (base + HOUR) / 1000]);
    // Listed (partly) for a correction, hour 1 is read raw; hour 30 is not listed yet, so the rollups miss it.
    expect(await readPaths(h, t, base, base + 2 * 24 * HOUR)).toEqual([0.000138, 0.000138, 0.000138, 0.000138]);

    await h.flush();
    expect((await h.pg.query('SELECT count(*)::int AS n FROM usage_rollup_backfill')).rows[0].n).toBe(0);
    expect((await h.pg.query('SELECT count(*)::int AS n FROM usage_pending_rollups WHERE account_id = $1', [t.accountId])).rows[0].n).toBe(0);
    // Three events of 10 GB-s, the one stored twice counted once.
    expect(await readPaths(h, t, base, base + 2 * 24 * HOUR)).toEqual([0.000207, 0.000207, 0.000207, 0.000207]);
    const contents = await rollupContents(h, t.accountId);
    for (const table of Object.keys(contents)) expect([table, contents[table].cost, contents[table].events]).toEqual([table, '0.000207000', '3']);
  });
});

describe('upgrading to additive rollups (migration 013)', () => {
  const stack = testStack();
  let db: ScratchDatabase;
  let pool: Pool;

  beforeAll(async () => {
    db = await scratchDatabase(stack.databaseUrl, 'billing_upgrade');
    pool = db.pool;
  });

  afterAll(() => db?.drop());

  it('treats rows waiting in the outbox as attempted, and the hours left pending as due for a correction', async () => {
    await db.migrateUpTo('013_usage_additive_rollups');
    await pool.query("INSERT INTO accounts (id, name) VALUES ('acc-up', 'upgrade')");
    // As an earlier release left them: a row that a failed flush may have inserted already, and an open hour.
    await pool.query("INSERT INTO usage_outbox (account_id, event_count, hours, tsv) VALUES ('acc-up', 1, '{1770710400}', 'x')");
    await pool.query("INSERT INTO usage_pending_rollups (account_id, hour) VALUES ('acc-up', 1770710400)");
    await db.migrateUpTo();

    expect((await pool.query('SELECT attempts FROM usage_outbox')).rows).toEqual([{ attempts: 1 }]);
    expect((await pool.query('SELECT reconcile FROM usage_pending_rollups')).rows).toEqual([{ reconcile: true }]);
    expect((await pool.query('SELECT count(*)::int AS n FROM usage_rollup_backfill')).rows[0].n).toBe(1);
    // Rows accepted from now on start unattempted.
    await pool.query("INSERT INTO usage_outbox (account_id, event_count, hours, tsv) VALUES ('acc-up', 1, '{1770710400}', 'y')");
    expect((await pool.query("SELECT attempts FROM usage_outbox WHERE tsv = 'y'")).rows).toEqual([{ attempts: 0 }]);
  });
});

describe('ClickHouse down', () => {
  const stack = testStack();
  const config = testConfig();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-billing-ch-'));
  const database = 'outage';
  let db: ScratchDatabase;
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
    db = await scratchDatabase(stack.databaseUrl, 'billing_outage', 6);
    pool = db.pool;
    await db.migrateUpTo();
    await startClickHouse();
    clickhouse = createClient({ url: chUrl, request_timeout: 10_000, log: { level: ClickHouseLogLevel.OFF } });
    await migrateClickHouse(clickhouse, database);
  });

  afterAll(async () => {
    await clickhouse?.close();
    await chService?.stop();
    await db?.drop();
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
      workflowsPath: require.resolve('../../../workflows/usage-flush'),
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
      await eventually('the flush to fail and retry', async () => {
        const pending = (await handle.describe()).raw.pendingActivities ?? [];
        return (pending[0]?.attempt ?? 0) >= 2 || undefined;
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
      await eventually('every event in ClickHouse', async () => Number((await totals().catch(() => ({ events: '0' }))).events) === 301 || undefined, 60_000);
      // 300 x 100 GB-s at the account's 0.000001 USD, plus 60 GB-s at 0.0000083 USD.
      expect(await totals()).toEqual({ events: '301', cost: '0.030498000' });
      await eventually('an empty outbox', async () => (await pool.query('SELECT count(*)::int AS n FROM usage_outbox')).rows[0].n === 0 || undefined, 10_000);
      // The batch was attempted before ClickHouse came back: its hours are corrected from the raw
      // events after it settles (reads take them raw meanwhile). Once none is pending, the rollup
      // holds every event once.
      await eventually('no pending hour', async () => (await pool.query('SELECT count(*)::int AS n FROM usage_pending_rollups')).rows[0].n === 0 || undefined, 10_000);
      const hourly = await clickhouse.query({
        query: `SELECT toString(sum(cost)) AS cost FROM ${tables.hourly} WHERE account_id = 'acc-out'`,
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
