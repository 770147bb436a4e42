import type { Pool, PoolClient } from 'pg';
import { costNano, parseScaled, PRICE_SCALE } from '../core/billing/decimal';
import { InvalidInput } from '../core/billing/errors';
import { clickhouseRow, eventKey, eventSecond, payloadHash, type UsageEvent } from '../core/billing/usage-events';

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

interface Candidate {
  index: number;
  event: UsageEvent;
  key: string;
  hash: string;
}

/**
 * Makes a set of validated events durable: each new id enters the idempotency ledger and the
 * events enter the outbox, in one transaction. Nothing is accepted when any event fails (unknown
 * workspace: InvalidInput; reused id with another payload: UsageConflict). Costs are fixed here,
 * at the prices in force now.
 */
export async function acceptUsageEvents(pool: Pool, accountId: string, events: UsageEvent[]): Promise<AcceptResult> {
  const candidates = uniqueCandidates(accountId, events);
  if (candidates.length === 0) return { accepted: 0, duplicates: events.length };
  const [prices] = await Promise.all([loadPrices(pool, accountId), checkWorkspaces(pool, accountId, events)]);

  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const fresh = await claimIds(client, candidates);
    if (fresh.length > 0) {
      const hours = new Set<number>();
      const lines = fresh.map(({ event }) => {
        const second = eventSecond(event);
        hours.add(second - (second % 3600));
        return clickhouseRow(accountId, event, costNano(event.quantityNano, prices.get(event.billingDimension)!));
      });
      await client.query('INSERT INTO usage_outbox (account_id, event_count, hours, rows) VALUES ($1, $2, $3, $4)', [
        accountId,
        fresh.length,
        [...hours],
        lines.join('\n'),
      ]);
    }
    await client.query('COMMIT');
    return { accepted: fresh.length, duplicates: events.length - fresh.length };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** One candidate per id; the same id twice in a request must say the same thing. */
function uniqueCandidates(accountId: string, events: UsageEvent[]): Candidate[] {
  const byId = new Map<string, Candidate>();
  events.forEach((event, index) => {
    const hash = payloadHash(event);
    const seen = byId.get(event.id);
    if (!seen) byId.set(event.id, { index, event, key: eventKey(accountId, event.id), hash });
    else if (seen.hash !== hash) throw new UsageConflict(index, event.id);
  });
  return [...byId.values()];
}

/**
 * Inserts the ids into the ledger and returns the candidates that are new. An id already there
 * (or being inserted by a concurrent request, which the insert waits for) is a duplicate when
 * its payload digest matches, a conflict otherwise.
 */
async function claimIds(client: PoolClient, candidates: Candidate[]): Promise<Candidate[]> {
  const keys = candidates.map((c) => c.key);
  const hashes = candidates.map((c) => c.hash);
  // Nearly always every id is new: a plain insert is a third cheaper than ON CONFLICT with
  // RETURNING. A known id makes it fail as a whole, and the careful path below runs instead.
  await client.query('SAVEPOINT claim');
  try {
    await client.query(`INSERT INTO usage_event_ledger (event_key, payload_hash) ${LEDGER_ROWS}`, [keys, hashes]);
    await client.query('RELEASE SAVEPOINT claim');
    return candidates;
  } catch (err) {
    if ((err as { code?: string }).code !== UNIQUE_VIOLATION) throw err;
    await client.query('ROLLBACK TO SAVEPOINT claim');
  }
  const inserted = await client.query<{ event_key: string }>(
    `INSERT INTO usage_event_ledger (event_key, payload_hash) ${LEDGER_ROWS} ON CONFLICT DO NOTHING RETURNING event_key`,
    [keys, hashes],
  );
  const fresh = new Set(inserted.rows.map((row) => row.event_key));
  const known = candidates.filter((c) => !fresh.has(c.key));
  const stored = await client.query<{ event_key: string; payload_hash: string }>(
    'SELECT event_key, payload_hash FROM usage_event_ledger WHERE event_key = ANY($1::uuid[])',
    [known.map((c) => c.key)],
  );
  const storedHash = new Map(stored.rows.map((row) => [row.event_key, row.payload_hash]));
  const conflict = known.find((c) => storedHash.get(c.key) !== c.hash);
  if (conflict) throw new UsageConflict(conflict.index, conflict.event.id);
  return candidates.filter((c) => fresh.has(c.key));
}

const LEDGER_ROWS = 'SELECT * FROM unnest($1::uuid[], $2::bigint[])';
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
async function checkWorkspaces(pool: Pool, accountId: string, events: UsageEvent[]): Promise<void> {
  const names = [...new Set(events.map((event) => event.workspace))];
  const found = await pool.query<{ name: string }>('SELECT name FROM workspaces WHERE account_id = $1 AND name = ANY($2::text[])', [
    accountId,
    names,
  ]);
  const existing = new Set(found.rows.map((row) => row.name));
  const index = events.findIndex((event) => !existing.has(event.workspace));
  if (index >= 0) {
    throw new InvalidInput('workspace', `events[${index}].workspace '${events[index].workspace}' is not a workspace of this account`, index);
  }
}
