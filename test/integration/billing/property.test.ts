import fc from 'fast-check';
import { createBillingTenant, ingest, metricsUrl, startBillingHarness, type BillingHarness, type EventInput } from './helpers';

/**
 * The metrics API against a plain computation: for random events and random queries, walking
 * every page of the API gives the same groups, costs, usage and buckets as summing the events
 * directly in TypeScript.
 */
let h: BillingHarness;
beforeAll(async () => {
  h = await startBillingHarness();
});
afterAll(() => h.close());

// The default price list of the 002_billing migration, in pico-USD per unit.
const PRICE: Record<string, [string, bigint]> = {
  sandbox_compute_runtime_gbs: ['sandbox', 8_300_000n],
  sandbox_image_storage_gbs: ['sandbox', 38_600n],
  sandbox_snapshot_storage_gbs: ['sandbox', 38_600n],
  agent_compute_runtime_gbs: ['agent', 8_300_000n],
  agent_image_storage_gbs: ['agent', 38_600n],
  agent_async_requests_count: ['agent', 100_000_000n],
  job_compute_runtime_gbs: ['job', 6_900_000n],
  job_image_storage_gbs: ['job', 38_600n],
  mcp_server_compute_runtime_gbs: ['mcp_server', 8_300_000n],
  mcp_server_image_storage_gbs: ['mcp_server', 38_600n],
  volume_storage_gbs: ['volume', 30_900n],
  custom_domain_active_time_hours: ['custom_domain', 1_400_000_000n],
};
const UNIT = (dimension: string) => (dimension.endsWith('_count') ? 'count' : dimension.endsWith('_hours') ? 'hours' : 'gbs');
const DIMENSIONS = ['workspace', 'resource_type', 'resource_name', 'resource_uuid', 'billing_dimension'] as const;
type Dim = (typeof DIMENSIONS)[number];
const FIELD: Record<Dim, keyof Model> = {
  workspace: 'workspace',
  resource_type: 'resourceType',
  resource_name: 'resourceName',
  resource_uuid: 'resourceUuid',
  billing_dimension: 'billingDimension',
};

const T0 = Date.parse('2026-01-26T00:00:00Z');
const SPAN = 6 * 86_400_000;

interface Model {
  workspace: string;
  resourceType: string;
  resourceName: string;
  resourceUuid: string;
  billingDimension: string;
  second: number;
  quantityNano: bigint;
  costNano: bigint;
}

const eventArb = fc.record({
  ws: fc.integer({ min: 0, max: 1 }),
  name: fc.constantFrom('alpha', 'beta', "o'neil"),
  uuid: fc.constantFrom('u-1', 'u-2', ''),
  dimension: fc.constantFrom(...Object.keys(PRICE)),
  offsetMs: fc.integer({ min: 0, max: SPAN }),
  quantity: fc.oneof(fc.integer({ min: 0, max: 5000 }), fc.constantFrom(0.5, 1.25, 3600.000000001, 0.1)),
  resend: fc.boolean(),
});

// Window edges land near event times (often exactly on them, or a millisecond or second off),
// where inclusive/exclusive and table boundaries matter most.
const edgeArb = fc.record({
  anchor: fc.nat(),
  delta: fc.oneof(fc.constantFrom(0, 1, -1, 999, 1000, -1000), fc.integer({ min: -7_200_000, max: 7_200_000 })),
});
const queryArb = fc.record({
  start: edgeArb,
  end: fc.oneof(edgeArb, fc.integer({ min: 1000, max: 40 * 86_400_000 })),
  resolution: fc.constantFrom(undefined, 'hourly', 'daily', 'weekly', 'monthly'),
  groupBy: fc.shuffledSubarray([...DIMENSIONS], { minLength: 0, maxLength: 3 }),
  filter: fc.option(fc.constantFrom<[string, string]>(['resourceName', 'alpha'], ['resourceType', 'sandbox'], ['resourceUuid', 'u-1'], ['billingDimension', 'volume_storage_gbs'])),
  limit: fc.integer({ min: 1, max: 6 }),
});

function bucketOf(ms: number, resolution: string): number {
  const d = new Date(ms);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  if (resolution === 'hourly') return Math.floor(ms / 3_600_000) * 3_600_000;
  if (resolution === 'daily') return day;
  if (resolution === 'weekly') return day - ((d.getUTCDay() + 6) % 7) * 86_400_000;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

const nanoOf = (n: number) => BigInt(Math.round(n * 1e9));

jest.setTimeout(60_000);

it('walking every page equals a plain computation over the events', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(eventArb, { minLength: 10, maxLength: 60, size: 'max' }), fc.array(queryArb, { minLength: 6, maxLength: 6 }), async (raw, queries) => {
      const t = await createBillingTenant(h.pg);
      const workspaces = [t.workspace, t.otherWorkspace];
      const inputs: EventInput[] = raw.map((e, i) => ({
        id: `e-${i}`,
        timestamp: new Date(T0 + e.offsetMs).toISOString(),
        workspace: workspaces[e.ws],
        resourceType: PRICE[e.dimension][0],
        resourceName: e.name,
        resourceUuid: e.uuid,
        billingDimension: e.dimension,
        quantity: e.quantity,
      }));
      // Arriving in three flushes, so that hours and days get rollup rows from several batches; and
      // re-sent events, which must not count twice.
      const third = Math.ceil(inputs.length / 3);
      const resent = inputs.filter((_, i) => raw[i].resend);
      for (const batch of [inputs.slice(0, third), inputs.slice(third, 2 * third), [...inputs.slice(2 * third), ...resent]]) {
        if (batch.length) expect((await ingest(h, t, batch)).statusCode).toBe(202);
        await h.flush();
      }
      const model: Model[] = inputs.map((e) => {
        const quantityNano = BigInt(e.quantity.toFixed(9).replace('.', ''));
        const price = PRICE[e.billingDimension][1];
        return {
          workspace: e.workspace,
          resourceType: e.resourceType,
          resourceName: e.resourceName,
          resourceUuid: e.resourceUuid ?? '',
          billingDimension: e.billingDimension,
          second: Math.floor(Date.parse(e.timestamp) / 1000),
          quantityNano,
          costNano: (quantityNano * price + 500_000_000_000n) / 1_000_000_000_000n,
        };
      });

      for (const q of queries) {
        const times = inputs.map((e) => Date.parse(e.timestamp));
        const edge = (e: { anchor: number; delta: number }) => (times.length ? times[e.anchor % times.length] : T0) + e.delta;
        let start = edge(q.start);
        let end = typeof q.end === 'number' ? start + q.end : edge(q.end);
        if (end <= start) [start, end] = end === start ? [start, start + 1000] : [end, start];
        const params: Record<string, string | number | undefined> = {
          startTime: new Date(start).toISOString(),
          endTime: new Date(end).toISOString(),
          resolution: q.resolution,
          groupBy: q.groupBy.length ? q.groupBy.join(',') : undefined,
          limit: q.limit,
        };
        if (q.filter) params[q.filter[0]] = q.filter[1];
        const first = await h.call(t.admin.apiKey, { method: 'GET', url: metricsUrl(t.accountId, params) });
        if (first.statusCode === 400) {
          // Only an explicit resolution over its window cap may be refused here.
          expect(first.json().message).toContain('resolution');
          continue;
        }
        expect(first.statusCode).toBe(200);
        const resolution = first.json().resolution as string;
        const groupBy = DIMENSIONS.filter((d) => q.groupBy.includes(d));

        // The plain computation.
        const [lo, hi] = [Math.ceil(start / 1000), Math.ceil(end / 1000)];
        const filterField = q.filter ? ({ resourceName: 'resourceName', resourceType: 'resourceType', resourceUuid: 'resourceUuid', billingDimension: 'billingDimension' } as const)[q.filter[0] as 'resourceName'] : undefined;
        const selected = model.filter((m) => m.second >= lo && m.second < hi && (!filterField || m[filterField] === q.filter![1]));
        const expected = new Map<string, { cost: bigint; quantity: bigint; buckets: Map<number, [bigint, bigint]>; members: Model[] }>();
        for (const m of selected) {
          const key = JSON.stringify(groupBy.map((d) => m[FIELD[d]]));
          let g = expected.get(key);
          if (!g) expected.set(key, (g = { cost: 0n, quantity: 0n, buckets: new Map(), members: [] }));
          g.cost += m.costNano;
          g.quantity += m.quantityNano;
          g.members.push(m);
          const b = bucketOf(m.second * 1000, resolution);
          const [c, u] = g.buckets.get(b) ?? [0n, 0n];
          g.buckets.set(b, [c + m.costNano, u + m.quantityNano]);
        }
        if (groupBy.length === 0 && expected.size === 0) expected.set('[]', { cost: 0n, quantity: 0n, buckets: new Map(), members: [] });

        // Every page of the API, reassembled.
        const seen = new Map<string, { summary: { cost: number; usage?: Record<string, number> }; timeseries: { timestamp: string; cost: number; usage?: Record<string, number> }[] } & Record<string, unknown>>();
        const totalCost = selected.reduce((s, m) => s + m.costNano, 0n);
        let page = first.json();
        for (;;) {
          expect(nanoOf(page.summary.totalCost)).toBe(totalCost);
          if (groupBy.includes('billing_dimension')) {
            const usage: Record<string, bigint> = {};
            for (const m of selected) usage[UNIT(m.billingDimension)] = (usage[UNIT(m.billingDimension)] ?? 0n) + m.quantityNano;
            expect(Object.fromEntries(Object.entries(page.summary.totalUsage).map(([u, n]) => [u, nanoOf(n as number)]))).toEqual(usage);
          } else {
            expect(page.summary.totalUsage).toBeUndefined();
          }
          for (const entry of page.data) {
            const key = JSON.stringify(groupBy.map((d) => entry[FIELD[d]]));
            expect(seen.has(key)).toBe(false);
            seen.set(key, entry);
          }
          if (!page.meta.hasMore) break;
          if (groupBy.length) expect(page.data).toHaveLength(q.limit);
          const next = await h.call(t.admin.apiKey, { method: 'GET', url: metricsUrl(t.accountId, { ...params, cursor: page.meta.nextCursor }) });
          expect(next.statusCode).toBe(200);
          page = next.json();
        }

        expect([...seen.keys()].sort()).toEqual([...expected.keys()].sort());
        for (const [key, g] of expected) {
          const entry = seen.get(key)!;
          expect(nanoOf(entry.summary.cost)).toBe(g.cost);
          const withUsage = groupBy.includes('billing_dimension');
          if (withUsage) expect(entry.summary.usage).toEqual({ [UNIT(g.members[0].billingDimension)]: Number(g.quantity) / 1e9 });
          else expect(entry.summary.usage).toBeUndefined();
          // Every bucket of the window, in order, zero where nothing happened.
          let b = bucketOf(start, resolution);
          for (const point of entry.timeseries) {
            expect(Date.parse(point.timestamp)).toBe(b);
            const [cost, quantity] = g.buckets.get(b) ?? [0n, 0n];
            expect(nanoOf(point.cost)).toBe(cost);
            if (withUsage) expect(nanoOf(Object.values(point.usage!)[0])).toBe(quantity);
            const d = new Date(b);
            b = resolution === 'monthly' ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) : b + { hourly: 3_600_000, daily: 86_400_000, weekly: 604_800_000 }[resolution]!;
          }
          expect(b).toBeGreaterThanOrEqual(end);
          // Enrichment: a field of a dimension not grouped appears exactly when the group has one value for it.
          const enrichedBy: Record<Dim, Dim[]> = {
            workspace: ['resource_uuid', 'resource_name'],
            resource_type: ['resource_uuid', 'resource_name', 'billing_dimension'],
            resource_name: ['resource_uuid'],
            resource_uuid: [],
            billing_dimension: [],
          };
          for (const d of DIMENSIONS) {
            if (groupBy.includes(d) || !enrichedBy[d].some((x) => groupBy.includes(x))) {
              if (!groupBy.includes(d)) expect(entry[FIELD[d]]).toBeUndefined();
              continue;
            }
            const values = new Set(g.members.map((m) => m[FIELD[d]]));
            expect(entry[FIELD[d]]).toBe(values.size === 1 ? [...values][0] : undefined);
          }
        }
      }
    }),
    { numRuns: 12 },
  );
});
