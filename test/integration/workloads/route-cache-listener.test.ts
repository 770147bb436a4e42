import { randomBytes } from 'node:crypto';
import { RouteCache } from '../../../api/gateway/route-cache';
import { createPool } from '../../../store/postgres-pool';
import { SecretBox } from '../../../domain/secret-box';
import { sleep } from '../../../scripts/stack/timing';
import { eventually } from '../../helpers/workers';
import { testStack } from '../../setup/stack';

jest.setTimeout(60_000);

/**
 * The gateways learn of route changes through LISTEN on one connection. A database restart ends
 * that connection; the gateways must listen again once the database is back, not fall back to
 * the TTL for the rest of their life (a wake would then wait for its update's answer alone).
 */
test('the route cache listens again after the database ended its listening connection', async () => {
  const pool = createPool(testStack().databaseUrl, 3);
  const channel = `routes_test_${randomBytes(4).toString('hex')}`;
  const cache = new RouteCache(pool, channel, new SecretBox(randomBytes(32)));
  /** Whether a notice for `id` reaches the cache (a waiter on it is released before its abort). */
  const noticeArrives = async (id: string): Promise<boolean> => {
    const abort = new AbortController();
    let notified = false;
    const waiting = cache.nextChange(id, abort.signal).then(() => (notified = !abort.signal.aborted));
    await pool.query(`SELECT pg_notify($1, $2)`, [channel, id]);
    await sleep(300);
    abort.abort();
    await waiting;
    return notified;
  };
  try {
    await cache.listen();
    expect(await noticeArrives('before')).toBe(true);

    const { rows } = await pool.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE query = $1`, [`LISTEN ${channel}`]);
    expect(rows).toHaveLength(1);
    await pool.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);

    await eventually('a notice to reach the cache again', async () => ((await noticeArrives('after')) ? true : undefined), 20_000);
  } finally {
    await cache.close();
    await pool.end();
  }
});
