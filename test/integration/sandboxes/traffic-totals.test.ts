import fc from 'fast-check';
import { ResourceStore } from '../../../store/resources';
import { createTenant, startTestApp, type TestApp } from '../../helpers/platform';

/**
 * The sandboxes' byte totals in PostgreSQL (`state.network`), added to in batches by node workers
 * (runtime/network/traffic-recorder.ts): batches at once, naming the same sandboxes in any order,
 * each landing at generated moments, all add up (an addition read and written back by the worker
 * would lose some).
 */
jest.setTimeout(120_000);

let t: TestApp;
let store: ResourceStore;
let ids: string[];

beforeAll(async () => {
  t = await startTestApp();
  store = new ResourceStore(t.app.pg);
  const tenant = await createTenant(t.app.pg, 'traffic');
  ids = [];
  for (const name of ['a', 'b', 'c', 'd']) {
    const row = await store.create({ workspaceId: tenant.workspaceId, kind: 'sandboxes', name }, { displayName: name, labels: {}, spec: {} }, 'DEPLOYED', 'test', 'test', { state: 'RUNNING' });
    if (!row) throw new Error(`sandbox row ${name} not created`);
    ids.push(row.id);
  }
});

afterAll(async () => {
  await t?.close();
});

async function totals(): Promise<Map<string, { bytesOut: number; bytesIn: number }>> {
  const { rows } = await t.app.pg.query<{ id: string; network: { bytesOut: number; bytesIn: number } | null }>("SELECT id, state->'network' AS network FROM resources WHERE id = ANY($1)", [ids]);
  return new Map(rows.map((row) => [row.id, row.network ?? { bytesOut: 0, bytesIn: 0 }]));
}

const count = fc.record({ sandbox: fc.nat(3), bytesOut: fc.nat(1_000_000), bytesIn: fc.nat(1_000_000) });

test('concurrent batches add up, whatever their order and timing', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.record({ delayMs: fc.nat(5), counts: fc.uniqueArray(count, { selector: (c) => c.sandbox, maxLength: 4 }) }), { minLength: 2, maxLength: 6 }), async (batches) => {
      const before = await totals();
      await Promise.all(
        batches.map(async ({ delayMs, counts }) => {
          await new Promise((resolve) => setTimeout(resolve, delayMs));
          await store.addSandboxTraffic(counts.map((c) => ({ id: ids[c.sandbox], bytesOut: c.bytesOut, bytesIn: c.bytesIn })));
        }),
      );
      const after = await totals();
      for (const [i, id] of ids.entries()) {
        const added = batches.flatMap((batch) => batch.counts).filter((c) => c.sandbox === i);
        expect(after.get(id)).toEqual({
          bytesOut: before.get(id)!.bytesOut + added.reduce((sum, c) => sum + c.bytesOut, 0),
          bytesIn: before.get(id)!.bytesIn + added.reduce((sum, c) => sum + c.bytesIn, 0),
        });
      }
    }),
    { numRuns: 40 },
  );
  // Other state is left as it was.
  expect((await t.app.pg.query("SELECT state->>'state' AS state FROM resources WHERE id = $1", [ids[0]])).rows[0].state).toBe('RUNNING');
});

test('an empty batch and a sandbox deleted meanwhile change nothing', async () => {
  await store.addSandboxTraffic([]);
  await store.addSandboxTraffic([{ id: '00000000-0000-4000-8000-000000000000', bytesOut: 5, bytesIn: 5 }]);
  expect((await t.app.pg.query("SELECT count(*)::int AS n FROM resources WHERE id = '00000000-0000-4000-8000-000000000000'")).rows[0].n).toBe(0);
});
