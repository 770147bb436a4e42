import { randomBytes } from 'node:crypto';
import { createPool } from '../../../store/postgres-pool';
import { listenOn } from '../../../store/pg-listener';
import { testStack } from '../../setup/stack';

jest.setTimeout(120_000);

/** A small deterministic generator, so that a failing interleaving can be run again from its seed. */
function generator(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

const ticks = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

/**
 * A gateway trusts a cached route only after caughtUp(): a caller told of a change (its statement
 * committed) must find the notice of it heard. Generated interleavings: notices committed by
 * several writers at once, caughtUp() called right after each commit, while other callers keep
 * round trips under way at random moments, so that calls join trips already under way. Without
 * the round trip, a few notices of every 150 rounds are still unheard when the call resolves.
 */
test('caughtUp() resolves only after every notice committed before the call was handled', async () => {
  const pool = createPool(testStack().databaseUrl, 6);
  const channel = `caught_up_${randomBytes(4).toString('hex')}`;
  const heard = new Set<string>();
  const listening = await listenOn(pool, channel, { notice: (payload) => heard.add(payload) });
  const seed = Number(process.env.HANGAR_TEST_SEED ?? Date.now() % 1_000_000);
  const random = generator(seed);
  let background = true;
  const others = (async () => {
    while (background) {
      await ticks(Math.floor(random() * 4));
      await listening.caughtUp();
    }
  })();
  const missed: string[] = [];
  try {
    for (let round = 0; round < 150; round++) {
      const writers = 1 + Math.floor(random() * 3);
      await Promise.all(
        Array.from({ length: writers }, async (_, w) => {
          const payload = `${round}-${w}`;
          await ticks(Math.floor(random() * 3));
          await pool.query('SELECT pg_notify($1, $2)', [channel, payload]);
          await ticks(Math.floor(random() * 2));
          await listening.caughtUp();
          if (!heard.has(payload)) missed.push(payload);
        }),
      );
    }
  } finally {
    background = false;
    await others;
    listening.close();
    await pool.end();
  }
  expect({ seed, missed }).toEqual({ seed, missed: [] });
});

test('caughtUp() resolves at once once the listening has ended', async () => {
  const pool = createPool(testStack().databaseUrl, 2);
  const listening = await listenOn(pool, `caught_up_${randomBytes(4).toString('hex')}`, { notice: () => undefined });
  listening.close();
  try {
    await expect(listening.caughtUp()).resolves.toBeUndefined();
  } finally {
    await pool.end();
  }
});
