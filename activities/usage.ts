import type { ClickHouseClient } from '@clickhouse/client';
import { Context } from '@temporalio/activity';
import type { Client as TemporalClient } from '@temporalio/client';
import type { Pool } from 'pg';
import { Readable } from 'node:stream';
import { REBUILD_SETTINGS, rebuildSql } from '../core/billing/rollup-sql';
import { usageTables, type UsageTables } from '../core/billing/storage';
import { chooseFlushBatch, type OutboxHead, type OutboxRow } from '../core/billing/flush-batch';
import { RAW_COLUMNS } from '../core/billing/usage-batch';
import { inTransaction } from '../db/transaction';
import { USAGE_FLUSH_WORKFLOW_ID, usageFlushWorkflow } from '../workflows/usage-flush';
import type { ActivityDeps } from './deps';

// Any fixed number; the same in every process sharing the database.
const FLUSH_LOCK = 7_460_023;
/** Events moved per ClickHouse insert: large enough for throughput, small enough for memory. */
const FLUSH_LIMITS = { maxEvents: 500_000, maxRows: 1_000 };
/**
 * How long the oldest waiting event may wait for a fuller batch. Each batch rebuilds the rollup
 * periods it touches from all their data, so under load a few large batches cost ClickHouse far
 * less than many small ones; at rest an event still shows within about this long.
 */
const GATHER_MS = 2_000;
const GATHER_POLL_MS = 100;
const LOCK_RETRY_MS = 250;
/** How long after its end an hour still takes late events before its rollups are built. */
const CLOSING_GRACE_S = 300;
const NEWLINE = Buffer.from('\n');

export interface FlushResult {
  /** Events moved to ClickHouse by this call. */
  events: number;
  /** True when the outbox still held rows when the time budget ran out. */
  more: boolean;
}

export interface FlushOptions {
  /** Stop starting new inserts after this long, so the workflow can checkpoint. */
  budgetMs?: number;
  /** Called between inserts (the activity heartbeats there). */
  progress?: () => void;
  /** How long the oldest waiting event may wait for a fuller batch (GATHER_MS); 0 flushes at once. */
  gatherMs?: number;
  /** The clock that decides which hours have closed (tests move it). */
  nowMs?: () => number;
}

/**
 * Moves accepted events from the PostgreSQL outbox to ClickHouse, oldest first, then rebuilds the
 * rollups of the closed hours (and their days) they touched, records the open hours they touched
 * as pending, then deletes the outbox rows. Pending hours are rebuilt once they close (see
 * rebuildClosedHours); until then reads take them from the raw table. A failure at any step
 * leaves the rows in the outbox, and the retry re-inserts them: the raw table's deduplication and
 * the rebuild-from-deduplicated-data make that harmless, so each event counts exactly once.
 *
 * One flusher runs at a time (an advisory lock), which keeps rebuild versions in commit order.
 */
export async function flushUsageOutbox(pool: Pool, clickhouse: ClickHouseClient, tables: UsageTables, options: FlushOptions = {}): Promise<FlushResult> {
  const deadline = Date.now() + (options.budgetMs ?? 20_000);
  const now = () => Math.floor((options.nowMs?.() ?? Date.now()) / 1000);
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
    for (;;) {
      await rebuildClosedHours(pool, clickhouse, tables, now());
      const batch = await nextBatch(pool, { deadline, gatherMs: options.gatherMs ?? GATHER_MS, progress: options.progress });
      if (batch.length === 0) return { events: moved, more: false };
      await insertRaw(pool, clickhouse, tables, batch);
      const { closed, open } = splitByClosing(batch, now());
      await rebuildRollups(pool, clickhouse, tables, closed);
      await settle(pool, batch, open);
      moved += batch.reduce((sum, row) => sum + row.event_count, 0);
      options.progress?.();
      if (Date.now() >= deadline) return { events: moved, more: true };
    }
  } finally {
    if (locked) await lock.query('SELECT pg_advisory_unlock($1)', [FLUSH_LOCK]).catch(() => undefined);
    lock.release();
  }
}

/** Hour starts (epoch seconds) by account. */
type AccountHours = Map<string, Set<number>>;

function addHour(hours: AccountHours, accountId: string, hour: number): void {
  let set = hours.get(accountId);
  if (!set) hours.set(accountId, (set = new Set()));
  set.add(hour);
}

/**
 * The last hour start that has closed at `now`. An hour closes a grace period after its end, so
 * that events sent a little late still find it open and its rollups are built once; later ones
 * rebuild it again, which is correct, only dearer.
 */
const lastClosedHour = (now: number) => now - 3600 - CLOSING_GRACE_S;

/** The hours of a batch by account, closed or still open at `now`. */
function splitByClosing(batch: OutboxRow[], now: number): { closed: AccountHours; open: AccountHours } {
  const closed: AccountHours = new Map();
  const open: AccountHours = new Map();
  for (const row of batch) {
    for (const text of row.hours) {
      const hour = Number(text);
      addHour(hour <= lastClosedHour(now) ? closed : open, row.account_id, hour);
    }
  }
  return { closed, open };
}

/** Records the batch's open hours as pending and deletes its outbox rows, in one transaction. */
async function settle(pool: Pool, batch: OutboxRow[], open: AccountHours): Promise<void> {
  const accounts = [...open].flatMap(([accountId, hours]) => [...hours].map(() => accountId));
  const hours = [...open.values()].flatMap((set) => [...set]);
  await inTransaction(pool, async (client) => {
    if (hours.length > 0) {
      await client.query(
        'INSERT INTO usage_pending_rollups (account_id, hour) SELECT * FROM unnest($1::text[], $2::bigint[]) ON CONFLICT DO NOTHING',
        [accounts, hours],
      );
    }
    await client.query('DELETE FROM usage_outbox WHERE seq = ANY($1::bigint[])', [batch.map((row) => row.seq)]);
  });
}

/** Rebuilds the rollups of pending hours that have closed, then forgets them. */
async function rebuildClosedHours(pool: Pool, clickhouse: ClickHouseClient, tables: UsageTables, now: number): Promise<void> {
  const { rows } = await pool.query<{ account_id: string; hour: string }>(
    'SELECT account_id, hour FROM usage_pending_rollups WHERE hour <= $1 ORDER BY account_id, hour',
    [lastClosedHour(now)],
  );
  if (rows.length === 0) return;
  const due: AccountHours = new Map();
  for (const row of rows) addHour(due, row.account_id, Number(row.hour));
  await rebuildRollups(pool, clickhouse, tables, due);
  await pool.query('DELETE FROM usage_pending_rollups WHERE (account_id, hour) IN (SELECT * FROM unnest($1::text[], $2::bigint[]))', [
    rows.map((row) => row.account_id),
    rows.map((row) => row.hour),
  ]);
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
 * Inserts the events of outbox rows into the raw table: TabSeparated bytes as they are, rows
 * accepted before the outbox held those (JSONEachRow text) in their own insert.
 */
async function insertRaw(pool: Pool, clickhouse: ClickHouseClient, tables: UsageTables, batch: OutboxRow[]): Promise<void> {
  const { rows } = await pool.query<{ tsv: boolean; data: string }>(
    'SELECT tsv IS NOT NULL AS tsv, COALESCE(tsv, rows) AS data FROM usage_outbox WHERE seq = ANY($1::bigint[]) ORDER BY seq',
    [batch.map((row) => row.seq)],
  );
  for (const format of ['TabSeparated', 'JSONEachRow'] as const) {
    const chunks = rows.filter((row) => row.tsv === (format === 'TabSeparated')).map((row) => Buffer.from(row.data));
    if (chunks.length === 0) continue;
    // Every TabSeparated row ends with a newline; JSONEachRow text has none after its last line.
    const body = Buffer.concat(format === 'TabSeparated' ? chunks : chunks.flatMap((chunk) => [chunk, NEWLINE]));
    const result = await clickhouse.exec({
      query: `INSERT INTO ${tables.raw} (${RAW_COLUMNS}) FORMAT ${format}`,
      values: Readable.from([body]),
    });
    // The response carries nothing, but reading it to the end is what confirms the insert.
    await new Promise<void>((resolve, reject) => {
      result.stream.on('end', resolve).on('error', reject).resume();
    });
  }
}

async function rebuildRollups(pool: Pool, clickhouse: ClickHouseClient, tables: UsageTables, hoursByAccount: AccountHours): Promise<void> {
  for (const [accountId, hours] of hoursByAccount) {
    const version = await nextRollupVersion(pool);
    for (const query of rebuildSql(tables, accountId, hours, version)) {
      await clickhouse.command({ query, clickhouse_settings: REBUILD_SETTINGS });
    }
  }
}

async function nextRollupVersion(pool: Pool): Promise<bigint> {
  const result = await pool.query<{ version: string }>("SELECT nextval('usage_rollup_version') AS version");
  return BigInt(result.rows[0].version);
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

/**
 * Starts the deployment's flush workflow unless it already runs (called at every worker start).
 * Tests pass their own workflow id and task queue.
 */
export async function startUsageFlush(
  client: TemporalClient,
  taskQueue: string,
  options: { workflowId?: string; idleMs?: number } = {},
): Promise<void> {
  await client.workflow.start(usageFlushWorkflow, {
    workflowId: options.workflowId ?? USAGE_FLUSH_WORKFLOW_ID,
    taskQueue,
    args: [{ idleMs: options.idleMs }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
}
