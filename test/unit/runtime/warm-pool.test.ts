import { WarmPool, isWarmId } from '../../../runtime/warm-pool';

/** A runtime stand-in whose starts the test completes or fails by hand. */
function fakeRuntime() {
  const pending = new Map<string, { resolve: () => void; reject: (err: Error) => void }>();
  const removed: string[] = [];
  return {
    pending,
    removed,
    start: (id: string) => new Promise<void>((resolve, reject) => pending.set(id, { resolve, reject })),
    remove: async (id: string) => void removed.push(id),
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

test('starts nothing until told to fill (the node has its image), then fills up to its size, hands out ready sandboxes once, and refills', async () => {
  const runtime = fakeRuntime();
  const pool = new WarmPool(2, runtime);
  pool.refill();
  expect(pool.status()).toEqual({ ready: 0, starting: 0, lastError: undefined });
  expect(runtime.pending.size).toBe(0);
  pool.fill();
  pool.refill();
  expect(pool.status()).toEqual({ ready: 0, starting: 2, lastError: undefined });
  const [first, second] = [...runtime.pending.keys()];
  expect(isWarmId(first) && isWarmId(second) && first !== second).toBe(true);
  runtime.pending.get(first)!.resolve();
  await settle();
  expect(pool.status()).toMatchObject({ ready: 1, starting: 1 });
  expect(pool.take()).toBe(first);
  expect(pool.take()).toBeUndefined();
  pool.refill();
  expect(runtime.pending.size).toBe(3);
});

test('a failed start is recorded and cleaned up; close ends what is ready and waits for what is starting, then ends it', async () => {
  const runtime = fakeRuntime();
  const pool = new WarmPool(2, runtime);
  pool.fill();
  const [a, b] = [...runtime.pending.keys()];
  runtime.pending.get(a)!.reject(new Error('bubblewrap missing'));
  runtime.pending.get(b)!.resolve();
  await settle();
  expect(pool.status()).toEqual({ ready: 1, starting: 0, lastError: 'bubblewrap missing' });
  expect(runtime.removed).toEqual([a]);
  pool.refill();
  const [c] = [...runtime.pending.keys()].slice(2);
  let closed = false;
  const closing = pool.close().then(() => (closed = true));
  await settle();
  expect(runtime.removed).toEqual([a, b]);
  // A worker that stops must not leave the sandbox still starting behind.
  expect(closed).toBe(false);
  runtime.pending.get(c)!.resolve();
  await closing;
  expect(runtime.removed).toEqual([a, b, c]);
  pool.refill();
  expect(runtime.pending.size).toBe(3);
});

test('adopts running warm sandboxes only while there is room', () => {
  const pool = new WarmPool(1, fakeRuntime());
  expect(pool.adopt('warm_a')).toBe(true);
  expect(pool.adopt('warm_a')).toBe(false);
  expect(pool.adopt('warm_b')).toBe(false);
  expect(isWarmId('0f8c2c9e-8d1b-4f7e-9c55-2a1b3c4d5e6f')).toBe(false);
});
