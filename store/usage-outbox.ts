import type { Pool, PoolClient } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { parseScaled, PRICE_SCALE } from '../domain/billing/decimal';
import { InvalidInput } from '../domain/billing/errors';
import { sameDigest } from '../domain/billing/payload-digest';
import { encodeUsageBatch, eventKeyText, ledgerCopyData, outboxCopyData, type UsageBatch } from '../domain/billing/usage-batch';
import type { UsageEvent } from '../domain/billing/usage-events';
import { inTransaction } from './transaction';

/** An event id already accepted with a different payload (or twice with different payloads in one request). */
export class UsageConflict extends Error {
  constructor(
    readonly index: number,
    readonly eventId: string,
  ) {
    super(`events[${index}].id '${eventId}' was already accepted with a different payload`);
    this.name = 'UsageConflict';
  }
}

export interface AcceptResult {
  /** Events newly accepted, now waiting in the outbox for ClickHouse. */
  accepted: number;
  /** Events whose id was already accepted with the same payload: counted once, not again. */
  duplicates: number;
}

/**
 * Makes a set of validated events durable, priced at the prices in force now. See acceptUsageBatch.
 */
export async function acceptUsageEvents(pool: Pool, accountId: string, events: UsageEvent[]): Promise<AcceptResult> {
  const prices = await loadPrices(pool, accountId);
  return acceptUsageBatch(pool, encodeUsageBatch(accountId, events, prices));
}

/**
 * Makes an encoded batch durable: each new id enters the idempotency ledger and the events enter
 * the outbox, in one transaction. Nothing is accepted when any event fails (unknown workspace:
 * InvalidInput; reused id with another payload: UsageConflict).
 */
export async function acceptUsageBatch(pool: Pool, batch: UsageBatch): Promise<AcceptResult> {
  if (batch.size === 0) return { accepted: 0, duplicates: 0 };
  await checkWorkspaces(pool, batch);
  return inTransaction(pool, async (client) => {
    await client.query('SAVEPOINT claim');
    const fresh = await claimIds(client, batch);
    if (fresh.length > 0) {
      const data = outboxCopyData(batch, fresh.length === batch.size ? undefined : fresh);
      await copyInto(client, 'COPY usage_outbox (account_id, event_count, hours, tsv) FROM STDIN (FORMAT binary)', data);
    }
    return { accepted: fresh.length, duplicates: batch.size - fresh.length };
  });
}

/**
 * Inserts the keys into the ledger and returns the indices of the events that are new, in
 * order. A key already there (or being inserted by a concurrent request, which the insert waits
 * for) is a duplicate when its payload digest matches, a conflict otherwise.
 */
async function claimIds(client: PoolClient, batch: UsageBatch): Promise<number[]> {
  // Nearly always every id is new: one binary COPY, the cheapest way into PostgreSQL. A known id
  // (or one twice in the request) makes it fail as a whole, and the careful path below runs.
  try {
    await copyInto(client, 'COPY usage_event_ledger (event_key, payload_hash) FROM STDIN (FORMAT binary)', [ledgerCopyData(batch)]);
    return Array.from({ length: batch.size }, (_, i) => i);
  } catch (err) {
    if ((err as { code?: string }).code !== UNIQUE_VIOLATION) throw err;
    await client.query('ROLLBACK TO SAVEPOINT claim');
  }
  // One candidate per id; the same id twice in a request must say the same thing.
  const firstOfKey = new Map<string, number>();
  for (let i = 0; i < batch.size; i++) {
    const key = eventKeyText(batch.keys, i);
    const first = firstOfKey.get(key);
    if (first === undefined) firstOfKey.set(key, i);
    else if (batch.hashes[first] !== batch.hashes[i]) throw new UsageConflict(i, batch.idOf(i));
  }
  // In key order, as the COPY: concurrent requests sharing ids then wait on each other's keys in
  // the same order, and never deadlock.
  const candidates = [...firstOfKey.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, i]) => i);
  const keyOf = (i: number) => eventKeyText(batch.keys, i);
  const inserted = await client.query<{ event_key: string }>(
    'INSERT INTO usage_event_ledger (event_key, payload_hash) SELECT * FROM unnest($1::uuid[], $2::bigint[]) ON CONFLICT DO NOTHING RETURNING event_key',
    [candidates.map(keyOf), candidates.map((i) => String(batch.hashes[i]))],
  );
  const fresh = new Set(inserted.rows.map((row) => row.event_key));
  const known = candidates.filter((i) => !fresh.has(keyOf(i)));
  const stored = await client.query<{ event_key: string; payload_hash: string }>(
    'SELECT event_key, payload_hash FROM usage_event_ledger WHERE event_key = ANY($1::uuid[])',
    [known.map(keyOf)],
  );
  const storedHash = new Map(stored.rows.map((row) => [row.event_key, Number(row.payload_hash)]));
  const conflict = known.find((i) => !sameDigest(storedHash.get(keyOf(i))!, batch.hashes[i], () => batch.legacyDigest(i)));
  if (conflict !== undefined) throw new UsageConflict(conflict, batch.idOf(conflict));
  return candidates.filter((i) => fresh.has(keyOf(i))).sort((a, b) => a - b);
}

async function copyInto(client: PoolClient, sql: string, pieces: Buffer[]): Promise<void> {
  const stream = client.query(copyFrom(sql));
  // 'finish' comes once the server has confirmed the COPY, 'error' when it refused it.
  await new Promise<void>((resolve, reject) => {
    stream.on('finish', resolve).on('error', reject);
    for (const piece of pieces.slice(0, -1)) stream.write(piece);
    stream.end(pieces[pieces.length - 1]);
  });
}

const UNIQUE_VIOLATION = '23505';

/** Price in pico-USD per unit of every dimension, for one account (its overrides, else defaults). */
export async function loadPrices(pool: Pool, accountId: string): Promise<Map<string, bigint>> {
  const result = await pool.query<{ billing_dimension: string; price: string }>(
    `SELECT d.billing_dimension, COALESCE(a.usd_per_unit, d.usd_per_unit)::text AS price
       FROM billing_default_prices d
       LEFT JOIN billing_account_prices a ON a.account_id = $1 AND a.billing_dimension = d.billing_dimension`,
    [accountId],
  );
  return new Map(result.rows.map((row) => [row.billing_dimension, parseScaled(row.price, PRICE_SCALE)]));
}

/** Every event must name a workspace of the account: usage is never booked to someone else's. */
async function checkWorkspaces(pool: Pool, batch: UsageBatch): Promise<void> {
  const names = [...batch.workspaces.keys()];
  const found = await pool.query<{ name: string }>('SELECT name FROM workspaces WHERE account_id = $1 AND name = ANY($2::text[])', [
    batch.accountId,
    names,
  ]);
  const existing = new Set(found.rows.map((row) => row.name));
  const missing = names.filter((name) => !existing.has(name)).map((name) => batch.workspaces.get(name)!);
  if (missing.length > 0) {
    const index = Math.min(...missing);
    const name = names.find((n) => batch.workspaces.get(n) === index);
    throw new InvalidInput('workspace', `events[${index}].workspace '${name}' is not a workspace of this account`, index);
  }
}
