import { createBillingTenant, ingest, metricsUrl, startBillingHarness, type BillingHarness, type BillingTenant, type EventInput } from './helpers';

let h: BillingHarness;
let t: BillingTenant;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const base = Date.parse('2026-03-02T00:00:00Z'); // a Monday
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

async function get(url: string, credential = t.admin.apiKey) {
  return h.call(credential, { method: 'GET', url });
}

// Starting the app and writing the fixtures can take longer than jest's 5 s hook limit on a busy machine.
beforeAll(async () => {
  h = await startBillingHarness();
  t = await createBillingTenant(h.pg);
  const events: EventInput[] = [];
  // 12 sandboxes over 3 days in the first workspace, one agent in the other, a custom domain.
  for (let i = 0; i < 12; i++) {
    for (let d = 0; d < 3; d++) {
      events.push({
        id: `sb-${i}-${d}`,
        timestamp: iso(base + d * DAY + i * HOUR),
        workspace: t.workspace,
        resourceType: 'sandbox',
        resourceName: `sb-${String(i).padStart(2, '0')}`,
        resourceUuid: `uuid-${i}`,
        billingDimension: d === 2 ? 'sandbox_snapshot_storage_gbs' : 'sandbox_compute_runtime_gbs',
        quantity: 100 * (i + 1),
      });
    }
  }
  events.push(
    {
      id: 'agent-1',
      timestamp: iso(base + 5 * HOUR),
      workspace: t.otherWorkspace,
      resourceType: 'agent',
      resourceName: 'sb-00', // the same name as a sandbox of the other workspace
      billingDimension: 'agent_async_requests_count',
      quantity: 40,
    },
    {
      id: 'domain-1',
      timestamp: iso(base + 30 * HOUR + 59 * 60_000 + 59_000),
      workspace: t.otherWorkspace,
      resourceType: 'custom_domain',
      resourceName: 'example-com',
      billingDimension: 'custom_domain_active_time_hours',
      quantity: 1,
    },
  );
  expect((await ingest(h, t, events)).statusCode).toBe(202);
  await h.flush();
}, 60_000);
afterAll(() => h.close());

describe('GET /v0/accounts/{accountId}/metrics', () => {
  const window = { startTime: iso(base), endTime: iso(base + 3 * DAY) };

  it('answers one aggregated entry with a zero-filled timeseries when groupBy is omitted', async () => {
    const res = await get(metricsUrl(t.accountId, window));
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ startTime: window.startTime, endTime: window.endTime, resolution: 'hourly', meta: { hasMore: false, nextCursor: '' } });
    expect(body.summary.totalUsage).toBeUndefined();
    expect(body.data).toHaveLength(1);
    const [entry] = body.data;
    expect(Object.keys(entry)).toEqual(['summary', 'timeseries']);
    expect(entry.timeseries).toHaveLength(72);
    expect(entry.timeseries[0]).toEqual({ timestamp: iso(base), cost: expect.any(Number) });
    expect(entry.timeseries[71]).toEqual({ timestamp: iso(base + 71 * HOUR), cost: 0 });
    expect(entry.timeseries.every((p: { usage?: unknown }) => p.usage === undefined)).toBe(true);
    const sum = entry.timeseries.reduce((s: number, p: { cost: number }) => s + Math.round(p.cost * 1e9), 0);
    expect(sum).toBe(Math.round(body.summary.totalCost * 1e9));
    expect(entry.summary.cost).toBe(body.summary.totalCost);
  });

  it('applies the default resolution and aligns daily, weekly and monthly buckets in UTC', async () => {
    const daily = (await get(metricsUrl(t.accountId, { startTime: iso(base - 3 * DAY + 5 * HOUR), endTime: iso(base + 10 * DAY) }))).json();
    expect(daily.resolution).toBe('daily');
    expect(daily.data[0].timeseries[0].timestamp).toBe(iso(base - 3 * DAY));
    expect(daily.data[0].timeseries).toHaveLength(13);
    const weekly = (await get(metricsUrl(t.accountId, { startTime: '2026-02-04T00:00:00Z', endTime: '2026-05-20T00:00:00Z' }))).json();
    expect(weekly.resolution).toBe('weekly');
    expect(weekly.data[0].timeseries[0].timestamp).toBe('2026-02-02T00:00:00Z');
    const monthly = (await get(metricsUrl(t.accountId, { startTime: '2025-06-15T00:00:00Z', endTime: '2026-06-15T00:00:00Z' }))).json();
    expect(monthly.resolution).toBe('monthly');
    expect(monthly.data[0].timeseries.map((p: { timestamp: string }) => p.timestamp).slice(0, 2)).toEqual(['2025-06-01T00:00:00Z', '2025-07-01T00:00:00Z']);
    expect(monthly.data[0].timeseries).toHaveLength(13);
    const march = monthly.data[0].timeseries.find((p: { timestamp: string }) => p.timestamp === '2026-03-01T00:00:00Z');
    expect(march.cost).toBe(monthly.summary.totalCost);
    expect(monthly.summary.totalCost).toBe(daily.summary.totalCost);
  });

  it('counts startTime inclusive and endTime exclusive, to the second', async () => {
    const at = base + 30 * HOUR + 59 * 60_000 + 59_000;
    const query = (start: number, end: number) =>
      get(metricsUrl(t.accountId, { startTime: iso(start), endTime: iso(end), billingDimension: 'custom_domain_active_time_hours' }));
    expect((await query(at, at + 1000)).json().summary.totalCost).toBe(0.0014);
    expect((await query(at - 1000, at)).json().summary.totalCost).toBe(0);
    expect((await query(at + 1000, at + 2000)).json().summary.totalCost).toBe(0);
  });

  it('groups by the cross-product, in canonical order, with enrichment and usage only with billing_dimension', async () => {
    const body = (await get(metricsUrl(t.accountId, { ...window, groupBy: 'billing_dimension,resource_name', resolution: 'daily' }))).json();
    const first = body.data[0];
    expect(Object.keys(first).sort()).toEqual(['billingDimension', 'resourceName', 'resourceType', 'summary', 'timeseries', 'workspace']);
    expect(first).toMatchObject({
      workspace: t.otherWorkspace,
      resourceName: 'example-com',
      resourceType: 'custom_domain',
      billingDimension: 'custom_domain_active_time_hours',
    });
    // The agent sb-00 and the sandbox sb-00 share a name but not a workspace or type: grouped by
    // name alone, such fields stay empty rather than guessing.
    const sb00 = (await get(metricsUrl(t.accountId, { ...window, groupBy: 'resource_name' }))).json().data[1];
    expect(sb00.resourceName).toBe('sb-00');
    expect(sb00.workspace).toBeUndefined();
    expect(sb00.resourceType).toBeUndefined();
    const agent = body.data.find((e: { billingDimension: string }) => e.billingDimension === 'agent_async_requests_count');
    expect(agent).toMatchObject({ resourceName: 'sb-00', resourceType: 'agent', summary: { usage: { count: 40 } } });
    expect(agent.workspace).toBe(t.otherWorkspace);
    expect(agent.timeseries.map((p: { usage: unknown }) => p.usage)).toEqual([{ count: 40 }, { count: 0 }, { count: 0 }]);
    expect(body.summary.totalUsage).toEqual({ gbs: expect.any(Number), count: 40, hours: 1 });
    const byName = (await get(metricsUrl(t.accountId, { ...window, groupBy: 'resource_name', workspace: t.workspace }))).json();
    expect(byName.data[0]).toMatchObject({ workspace: t.workspace, resourceType: 'sandbox', resourceName: 'sb-00' });
    expect(byName.data[0].summary.usage).toBeUndefined();
    expect(byName.summary.totalUsage).toBeUndefined();
    const byUuid = (await get(metricsUrl(t.accountId, { ...window, groupBy: 'resource_uuid' }))).json();
    expect(byUuid.data.find((e: { resourceUuid: string }) => e.resourceUuid === 'uuid-3')).toMatchObject({
      workspace: t.workspace,
      resourceType: 'sandbox',
      resourceName: 'sb-03',
      resourceUuid: 'uuid-3',
    });
  });

  it('walks composite groups page by page, each exactly once, totals equal on every page', async () => {
    const params = { ...window, groupBy: 'resource_name,workspace,billing_dimension', limit: 5 };
    const seen: string[][] = [];
    let cursor: string | undefined;
    let costSum = 0;
    let pages = 0;
    let totalCost: number | undefined;
    do {
      const res = await get(metricsUrl(t.accountId, { ...params, cursor }));
      expect(res.statusCode).toBe(200);
      const body = res.json();
      totalCost ??= body.summary.totalCost;
      expect(body.summary.totalCost).toBe(totalCost);
      expect(body.data.length).toBeLessThanOrEqual(5);
      for (const e of body.data) {
        seen.push([e.workspace, e.resourceName, e.billingDimension]);
        costSum += Math.round(e.summary.cost * 1e9);
      }
      expect(body.meta.nextCursor === '').toBe(!body.meta.hasMore);
      cursor = body.meta.hasMore ? body.meta.nextCursor : undefined;
      pages++;
    } while (cursor);
    expect(seen).toHaveLength(26); // 12 sandboxes x 2 dimensions, the agent, the domain
    expect(new Set(seen.map((key) => key.join('/'))).size).toBe(26);
    expect(pages).toBe(6);
    expect(costSum).toBe(Math.round(totalCost! * 1e9));
    // Stable order: by the key in canonical dimension order (workspace, resource_name, billing_dimension).
    const byKey = (a: string[], b: string[]) => {
      const i = a.findIndex((part, j) => part !== b[j]);
      return i < 0 ? 0 : a[i] < b[i] ? -1 : 1;
    };
    expect([...seen].sort(byKey)).toEqual(seen);
  });

  it('refuses a cursor replayed with other parameters', async () => {
    const first = (await get(metricsUrl(t.accountId, { ...window, groupBy: 'resource_name', limit: 5 }))).json();
    const cursor = first.meta.nextCursor;
    expect(cursor).not.toBe('');
    const ok = await get(metricsUrl(t.accountId, { ...window, groupBy: 'resource_name', limit: 5, cursor }));
    expect(ok.statusCode).toBe(200);
    for (const changed of [{ groupBy: 'resource_uuid' }, { limit: 6 }, { resolution: 'daily' }, { resourceType: 'sandbox' }, { groupBy: undefined }]) {
      const res = await get(metricsUrl(t.accountId, { ...window, groupBy: 'resource_name', limit: 5, ...changed, cursor }));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'bad_request', message: expect.stringContaining('cursor') });
    }
  });

  it('clamps limit above 100 and refuses it below 1', async () => {
    const big = await get(metricsUrl(t.accountId, { ...window, groupBy: 'resource_name', limit: 1000 }));
    expect(big.statusCode).toBe(200);
    expect(big.json().data).toHaveLength(13); // 12 sandboxes and the domain; the agent shares sb-00
    expect((await get(metricsUrl(t.accountId, { ...window, groupBy: 'resource_name', limit: 0 }))).statusCode).toBe(400);
  });

  it('filters by every dimension', async () => {
    const cost = async (filter: Record<string, string>) => (await get(metricsUrl(t.accountId, { ...window, ...filter }))).json().summary.totalCost;
    expect(await cost({ billingDimension: 'agent_async_requests_count' })).toBe(0.004);
    expect(await cost({ resourceType: 'agent' })).toBe(0.004);
    expect(await cost({ workspace: t.otherWorkspace })).toBe(0.0054);
    expect(await cost({ resourceName: 'sb-00', resourceType: 'agent' })).toBe(0.004);
    expect(await cost({ resourceUuid: 'uuid-0' })).toBeCloseTo(2 * 100 * 0.0000083 + 100 * 0.0000000386, 12);
    expect(await cost({ resourceName: 'nothing' })).toBe(0);
  });

  it.each([
    [{ endTime: '2026-03-05T00:00:00Z' }, 'startTime'],
    [{ startTime: '2026-03-02T00:00:00Z', endTime: 'tomorrow' }, 'endTime'],
    [{ startTime: '2026-03-05T00:00:00Z', endTime: '2026-03-02T00:00:00Z' }, 'startTime'],
    [{ startTime: '2026-01-01T00:00:00Z', endTime: '2026-03-02T00:00:00Z', resolution: 'hourly' }, 'resolution'],
    [{ startTime: '2026-03-02T00:00:00Z', endTime: '2026-03-05T00:00:00Z', groupBy: 'a,b,c,d' }, 'groupBy'],
    [{ startTime: '2026-03-02T00:00:00Z', endTime: '2026-03-05T00:00:00Z', billingDimension: 'cpu' }, 'billingDimension'],
    [{ startTime: '2026-03-02T00:00:00Z', endTime: '2026-03-05T00:00:00Z', resourceType: 'vm' }, 'resourceType'],
    [{ startTime: '2026-03-02T00:00:00Z', endTime: '2026-03-05T00:00:00Z', label: 'x' }, 'label'],
  ])('400 for %j naming %s', async (params, name) => {
    const res = await get(metricsUrl(t.accountId, params));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'bad_request', message: expect.stringContaining(name) });
  });

  it('reserves workspace= and groupBy workspace to account admins; others see only their workspaces', async () => {
    const asWsAdmin = (params: Record<string, string>) => get(metricsUrl(t.accountId, { ...window, ...params }), t.workspaceAdmin.apiKey);
    for (const params of <Record<string, string>[]>[{ workspace: t.workspace }, { groupBy: 'workspace' }, { groupBy: 'resource_name,workspace' }]) {
      const res = await asWsAdmin(params);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ error: 'access_denied', message: expect.any(String) });
    }
    const own = (await asWsAdmin({ groupBy: 'resource_type' })).json();
    expect(own.data.map((e: { resourceType: string }) => e.resourceType)).toEqual(['sandbox']);
    const all = (await get(metricsUrl(t.accountId, { ...window, workspace: t.workspace }))).json();
    expect(own.summary.totalCost).toBe(all.summary.totalCost);
  });

  it('gives no data to callers outside the account', async () => {
    const stranger = await createBillingTenant(h.pg);
    const res = await get(metricsUrl(t.accountId, window), stranger.admin.apiKey);
    expect(res.statusCode).toBe(404);
    expect(res.json().data).toBeUndefined();
    expect((await get(`/v0/accounts/${t.accountId}/metrics/enums/group-by`, stranger.admin.apiKey)).statusCode).toBe(404);
    const unauthenticated = await h.app.inject({ method: 'GET', url: metricsUrl(t.accountId, window) });
    expect(unauthenticated.statusCode).toBe(401);
  });
});

describe('metrics enums', () => {
  it('lists the groupBy values', async () => {
    const res = await get(`/v0/accounts/${t.accountId}/metrics/enums/group-by`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ values: ['workspace', 'resource_type', 'resource_name', 'resource_uuid', 'billing_dimension'] });
  });

  it('lists the resource types seen in the window', async () => {
    const types = async (start: number, end: number) =>
      (await get(`/v0/accounts/${t.accountId}/metrics/enums/resource-types?startTime=${iso(start)}&endTime=${iso(end)}`)).json().values;
    expect(await types(base, base + 3 * DAY)).toEqual(['agent', 'custom_domain', 'sandbox']);
    expect(await types(base + 30 * HOUR, base + 31 * HOUR)).toEqual(['custom_domain', 'sandbox']);
    expect(await types(base + 3 * DAY, base + 30 * DAY)).toEqual([]);
    const bad = await get(`/v0/accounts/${t.accountId}/metrics/enums/resource-types?startTime=${iso(base)}`);
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toContain('endTime');
  });
});
