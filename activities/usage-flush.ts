import type { ClickHouseClient } from '@clickhouse/client';
import { Context } from '@temporalio/activity';
import type { Pool, QueryConfig } from 'pg';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { createStagingSql, deltaSql, reconcileSql, STAGING_PREFIX, stagingTable } from '../domain/billing/rollup-sql';
import { usageTables, type UsageTables } from '../domain/billing/storage';
import { chooseFlushBatch, type OutboxHead, type OutboxRow } from '../domain/billing/flush-batch';
import { RAW_COLUMNS } from '../domain/billing/usage-batch';
import { sqlLiteral } from '../domain/sql-literal';
import { inTransaction, type Queryable } from '../store/transaction';
import type { ActivityDeps } from './support/activity-deps';

// Any fixed number; the same in every process sharing the database.
const FLUSH_LOCK = 7_460_023;
/** Events moved per ClickHouse insert: large enough for throughput, small enough for memory. */
const FLUSH_LIMITS = { maxEvents: 500_000, maxRows: 1_000 };
/**
 * How long the oldest waiting event may wait for a fuller batch. Every batch costs ClickHouse a
 * few statements and new parts to merge, so under load a few large batches cost it far less than
 * many small ones; at rest an event still shows within about this long.
 */
const GATHER_MS = 2_000;
const GATHER_POLL_MS = 100;
const LOCK_RETRY_MS = 250;
/**
 * Hours corrected per round: bounds one correction's statements, and ClickHouse's memory for
 * them (a week of an account's events at once, when filling the rollups after an upgrade).
 */
const RECONCILE_CHUNK = 168;
const NEWLINE = Buffer.from('\n');

export interface FlushResult {
  /** Events moved to ClickHouse by this call. */
  events: number;
  /** True when the outbox still held rows (or hours awaited correction) when the time budget ran out. */
  more: boolean;
}

export interface FlushOptions {
  /** Stop starting new inserts after this long, so the workflow can checkpoint. */
  budgetMs?: number;
  /** Called between inserts (the activity heartbeats there). */
  progress?: () => void;
  /** How long the oldest waiting event may wait for a fuller batch (GATHER_MS); 0 flushes at once. */
  gatherMs?: number;
}

/**
 * Moves accepted events from the PostgreSQL outbox to ClickHouse, oldest first, and keeps the
 * rollups equal to them (see domain/billing/rollup-sql.ts). Per batch:
 *
 * 1. In PostgreSQL, count an attempt on its outbox rows and list its hours as pending, so reads
 *    take them raw until step 3, and a failure part way leaves them listed.
 * 2. Stage its events in ClickHouse, insert them into the raw table and, if no row of the batch
 *    was attempted before, add them to the rollups. A batch attempted before may already be in
 *    ClickHouse, in whole or in part: its hours are marked for a correction from the raw events
 *    instead, which the raw table's deduplication makes exact.
 * 3. Delete its outbox rows and unlist its hours (unless due for a correction).
 *
 * Hours due for a correction are corrected before each batch. Each event counts exactly once
 * however often any step fails and is retried. One flusher runs at a time (an advisory lock).
 */
export async function flushUsageOutbox(pool: Pool, clickhouse: ClickHouseClient, tables: UsageTables, options: FlushOptions = {}): Promise<FlushResult> {
  const deadline = Date.now() + (options.budgetMs ?? 20_000);
  const lock = await pool.connect();
  let moved = 0;
  let locked = false;
  try {
    // Another flusher (another worker, a test) holds the lock for at most its own budget. Waiting
    // in short tries keeps the heartbeat going and never outlives this call's budget.
    while (!(locked = (await lock.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [FLUSH_LOCK])).rows[0].ok)) {
      if (Date.now() >= deadline) return { events: 0, more: false };
      options.progress?.();
      await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
    }
    await listBackfillHours(pool, clickhouse, tables);
    for (;;) {
      if (!(await reconcileDueHours(pool, clickhouse, tables, deadline, options.progress))) return { events: moved, more: true };
      const batch = await nextBatch(pool, { deadline, gatherMs: options.gatherMs ?? GATHER_MS, progress: options.progress });
      if (batch.length === 0) return { events: moved, more: false };
      const hours = accountHoursOf(batch);
      const firstAttempt = await beginBatch(pool, batch, hours);
      await moveBatch(pool, clickhouse, tables, batch, firstAttempt);
      await settle(pool, batch, hours);
      moved += batch.reduce((sum, row) => sum + row.event_count, 0);
      options.progress?.();
      if (Date.now() >= deadline) return { events: moved, more: true };
    }
  } finally {
    if (locked) await lock.query('SELECT pg_advisory_unlock($1)', [FLUSH_LOCK]).catch(() => undefined);
    lock.release();
  }
}

/** (account, hour start) pairs, as parallel arrays for unnest. */
interface AccountHours {
  accounts: string[];
  hours: number[];
}

function accountHoursOf(batch: OutboxRow[]): AccountHours {
  const seen = new Set<string>();
  const pairs: AccountHours = { accounts: [], hours: [] };
  for (const row of batch) {
    for (const text of row.hours) {
      const key = `${row.account_id}\u0000${text}`;
      if (seen.has(key)) continue;
      seen.add(key);
      pairs.accounts.push(row.account_id);
      pairs.hours.push(Number(text));
    }
  }
  return pairs;
}

/**
 * Step 1: counts an attempt on the batch's rows and lists its hours as pending, due for a
 * correction unless this is the rows' first attempt. Returns whether it is.
 */
async function beginBatch(pool: Pool, batch: OutboxRow[], hours: AccountHours): Promise<boolean> {
  return inTransaction(pool, async (client) => {
    const attempts = await client.query<{ first: boolean }>(
      'WITH counted AS (UPDATE usage_outbox SET attempts = attempts + 1 WHERE seq = ANY($1::bigint[]) RETURNING attempts) SELECT bool_and(attempts = 1) AS first FROM counted',
      [batch.map((row) => row.seq)],
    );
    const first = attempts.rows[0].first === true;
    await listPending(client, hours, !first);
    return first;
  });
}

/** Step 3: deletes the batch's outbox rows and unlists its hours, but those due for a correction. */
async function settle(pool: Pool, batch: OutboxRow[], hours: AccountHours): Promise<void> {
  await inTransaction(pool, async (client) => {
    await unlistPending(client, hours, false);
    await client.query('DELETE FROM usage_outbox WHERE seq = ANY($1::bigint[])', [batch.map((row) => row.seq)]);
  });
}

/** Lists hours as pending; `reconcile` marks them due for a correction (a mark never taken back here). */
async function listPending(db: Queryable, hours: AccountHours, reconcile: boolean): Promise<void> {
  await db.query(
    `INSERT INTO usage_pending_rollups (account_id, hour, reconcile) SELECT account_id, hour, $3 FROM unnest($1::text[], $2::bigint[]) AS t (account_id, hour)
     ON CONFLICT (account_id, hour) DO UPDATE SET reconcile = usage_pending_rollups.reconcile OR EXCLUDED.reconcile`,
    [hours.accounts, hours.hours, reconcile],
  );
}

/** Unlists those of `hours` whose mark is `reconcile`. */
async function unlistPending(db: Queryable, hours: AccountHours, reconcile: boolean): Promise<void> {
  await db.query('DELETE FROM usage_pending_rollups WHERE reconcile = $3 AND (account_id, hour) IN (SELECT * FROM unnest($1::text[], $2::bigint[]))', [
    hours.accounts,
    hours.hours,
    reconcile,
  ]);
}

/**
 * Corrects the rollups of the hours due for it, a chunk at a time, and unlists them. Returns
 * false if the deadline came first.
 */
async function reconcileDueHours(pool: Pool, clickhouse: ClickHouseClient, tables: UsageTables, deadline: number, progress?: () => void): Promise<boolean> {
  for (;;) {
    const { rows } = await pool.query<{ account_id: string; hour: string }>(
      'SELECT account_id, hour FROM usage_pending_rollups WHERE reconcile ORDER BY account_id, hour LIMIT $1',
      [RECONCILE_CHUNK],
    );
    if (rows.length === 0) return true;
    const due: AccountHours = { accounts: rows.map((row) => row.account_id), hours: rows.map((row) => Number(row.hour)) };
    // Ordered by account: each account's hours are one run.
    for (let start = 0; start < rows.length; ) {
      let end = start;
      while (end < rows.length && due.accounts[end] === due.accounts[start]) end++;
      for (const query of reconcileSql(tables, due.accounts[start], due.hours.slice(start, end))) await clickhouse.command({ query });
      start = end;
    }
    await unlistPending(pool, due, true);
    progress?.();
    if (Date.now() >= deadline) return false;
  }
}

/**
 * Once after the rollups became sums (migration 013): lists every hour the raw table holds as due
 * for a correction, which fills the new rollups from it.
 */
async function listBackfillHours(pool: Pool, clickhouse: ClickHouseClient, tables: UsageTables): Promise<void> {
  if ((await pool.query('SELECT 1 FROM usage_rollup_backfill')).rowCount === 0) return;
  const result = await clickhouse.query({
    query: `SELECT DISTINCT account_id, toUInt32(toStartOfHour(event_time)) AS hour FROM ${tables.raw}`,
    format: 'JSONEachRow',
  });
  const stored = await result.json<{ account_id: string; hour: number }>();
  await inTransaction(pool, async (client) => {
    await listPending(client, { accounts: stored.map((row) => row.account_id), hours: stored.map((row) => row.hour) }, true);
    await client.query('DELETE FROM usage_rollup_backfill');
  });
}

/**
 * The oldest outbox rows, as many as fit in one insert, without their events; empty when the
 * outbox is. While they fill less than an insert, it waits for more (see chooseFlushBatch) until
 * the deadline comes.
 */
async function nextBatch(pool: Pool, wait: { deadline: number; gatherMs: number; progress?: () => void }): Promise<OutboxRow[]> {
  for (;;) {
    const heads = await pool.query<OutboxHead>(
      `SELECT seq, account_id, event_count, hours, (extract(epoch FROM clock_timestamp() - accepted_at) * 1000)::float8 AS waited_ms
         FROM usage_outbox ORDER BY seq LIMIT $1`,
      [FLUSH_LIMITS.maxRows],
    );
    const batch = chooseFlushBatch(heads.rows, { ...FLUSH_LIMITS, gatherMs: wait.gatherMs });
    if (batch.ready || Date.now() + GATHER_POLL_MS >= wait.deadline) return batch.rows;
    wait.progress?.();
    await new Promise((resolve) => setTimeout(resolve, GATHER_POLL_MS));
  }
}

/**
 * Step 2: stages the batch's events in a ClickHouse memory table (TabSeparated bytes as they
 * are; rows accepted before the outbox held those, JSONEachRow text, in their own insert), copies
 * them into the raw table and, on a first attempt, adds them to the rollups.
 */
async function moveBatch(pool: Pool, clickhouse: ClickHouseClient, tables: UsageTables, batch: OutboxRow[], firstAttempt: boolean): Promise<void> {
  // In binary: each row's events arrive as the bytes PostgreSQL holds, with no decoding into a
  // JavaScript string (megabytes per row) and no encoding back.
  // (`binary` is a pg query option its type declarations leave out.)
  const query: QueryConfig & { binary: boolean } = {
    text: 'SELECT tsv IS NOT NULL AS tsv, COALESCE(tsv, rows) AS data FROM usage_outbox WHERE seq = ANY($1::bigint[]) ORDER BY seq',
    values: [batch.map((row) => row.seq)],
    binary: true,
    types: AS_BYTES,
  };
  const { rows } = await pool.query<{ tsv: Buffer; data: Buffer }>(query);
  await dropStagingLeftovers(clickhouse, tables);
  const staging = stagingTable(tables, randomBytes(8).toString('hex'));
  await clickhouse.command({ query: createStagingSql(tables, staging) });
  try {
    for (const format of ['TabSeparated', 'JSONEachRow'] as const) {
      // A binary boolean is one byte, 1 for true.
      const chunks = rows.filter((row) => (row.tsv[0] === 1) === (format === 'TabSeparated')).map((row) => row.data);
      if (chunks.length === 0) continue;
      // Every TabSeparated row ends with a newline; JSONEachRow text has none after its last line.
      const body = format === 'TabSeparated' ? chunks : chunks.flatMap((chunk) => [chunk, NEWLINE]);
      const result = await clickhouse.exec({ query: `INSERT INTO ${staging} (${RAW_COLUMNS}) FORMAT ${format}`, values: Readable.from(body) });
      // The response carries nothing, but reading it to the end is what confirms the insert.
      await new Promise<void>((resolve, reject) => {
        result.stream.on('end', resolve).on('error', reject).resume();
      });
    }
    await clickhouse.command({ query: `INSERT INTO ${tables.raw} (${RAW_COLUMNS}) SELECT ${RAW_COLUMNS} FROM ${staging}` });
    if (firstAttempt) for (const query of deltaSql(tables, staging)) await clickhouse.command({ query });
  } finally {
    await clickhouse.command({ query: `DROP TABLE IF EXISTS ${staging}` }).catch(() => undefined);
  }
}

/** Type parsers that leave every value as its bytes. */
const AS_BYTES = { getTypeParser: () => (value: Buffer) => value };

/** Staging tables a crashed flush left behind (one flusher runs at a time, so none is in use). */
async function dropStagingLeftovers(clickhouse: ClickHouseClient, tables: UsageTables): Promise<void> {
  const result = await clickhouse.query({
    query: `SELECT substring(name, ${STAGING_PREFIX.length + 1}) AS token FROM system.tables WHERE database = ${sqlLiteral(tables.database)} AND substring(name, 1, ${STAGING_PREFIX.length}) = ${sqlLiteral(STAGING_PREFIX)}`,
    format: 'JSONEachRow',
  });
  for (const { token } of await result.json<{ token: string }>()) {
    await clickhouse.command({ query: `DROP TABLE IF EXISTS ${stagingTable(tables, token)}` });
  }
}

/** Activities of usage metering, registered by the control worker. */
export function createUsageActivities(deps: Pick<ActivityDeps, 'pg' | 'clickhouse' | 'config'>) {
  const tables = usageTables(deps.config.clickhouseDatabase);
  return {
    async flushUsageOutbox(): Promise<FlushResult> {
      const context = Context.current();
      return flushUsageOutbox(deps.pg, deps.clickhouse, tables, { progress: () => context.heartbeat() });
    },
  };
}

export type UsageActivities = ReturnType<typeof createUsageActivities>;
