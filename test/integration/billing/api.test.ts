import { DIGEST_MARK, legacyPayloadDigest, payloadDigest } from '../../../domain/billing/payload-digest';
import { eventKeyPrefix, eventKeyText, writeEventKey } from '../../../domain/billing/usage-batch';
import { parseUsageEvents } from '../../../domain/billing/usage-events';
import { eventually } from '../../helpers/workers';
import { createBillingTenant, ingest, metricsUrl, startBillingHarness, type BillingHarness, type BillingTenant, type EventInput } from './helpers';

let h: BillingHarness;
let t: BillingTenant;

const HOUR = 3_600_000;
const base = Date.parse('2026-03-02T00:00:00Z'); // a Monday
const iso = (ms: number) => new Date(ms).toISOString();

/** The ledger key of an event, as PostgreSQL prints it. */
function keyOf(accountId: string, id: string): string {
  const keys = Buffer.alloc(16);
  writeEventKey(keys, 0, eventKeyPrefix(accountId), id);
  return eventKeyText(keys, 0);
}

function event(id: string, overrides: Partial<EventInput> = {}): EventInput {
  return {
    id,
    timestamp: iso(base + HOUR),
    workspace: t.workspace,
    resourceType: 'sandbox',
    resourceName: 'web',
    resourceUuid: 'uuid-web',
    billingDimension: 'sandbox_compute_runtime_gbs',
    quantity: 1000,
    ...overrides,
  };
}

beforeAll(async () => {
  h = await startBillingHarness();
  t = await createBillingTenant(h.pg);
});
afterAll(() => h.close());

describe('usage-events ingestion', () => {
  it('accepts events once per id, prices them, and shows them after the flush', async () => {
    const first = await ingest(h, t, [
      event('a-1'),
      event('a-2', { timestamp: iso(base + 2 * HOUR + 1500), quantity: 500 }),
      event('a-3', { workspace: t.otherWorkspace, resourceType: 'volume', resourceName: 'data', billingDimension: 'volume_storage_gbs', quantity: 1e6 }),
    ]);
    expect(first.statusCode).toBe(202);
    expect(first.json()).toEqual({ accepted: 3, duplicates: 0 });
    // The same ids again (one of them twice in the request): nothing new.
    const again = await ingest(h, t, [event('a-1'), event('a-2', { timestamp: iso(base + 2 * HOUR + 1500), quantity: 500 }), event('a-1')]);
    expect(again.statusCode).toBe(202);
    expect(again.json()).toEqual({ accepted: 0, duplicates: 3 });
    await h.flush();

    const res = await h.call(t.admin.apiKey, {
      method: 'GET',
      url: metricsUrl(t.accountId, { startTime: iso(base), endTime: iso(base + 6 * HOUR), groupBy: 'billing_dimension' }),
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    // 1500 GB-s at 0.0000083 USD + 1e6 GB-s at 0.0000000309 USD
    expect(body.summary).toEqual({ totalCost: 0.01245 + 0.0309, totalUsage: { gbs: 1_001_500 } });
    expect(body.resolution).toBe('hourly');
    const compute = body.data.find((e: { billingDimension: string }) => e.billingDimension === 'sandbox_compute_runtime_gbs');
    expect(compute).toEqual({
      resourceType: 'sandbox',
      billingDimension: 'sandbox_compute_runtime_gbs',
      summary: { cost: 0.01245, usage: { gbs: 1500 } },
      timeseries: [0, 1, 2, 3, 4, 5].map((i) => ({
        timestamp: iso(base + i * HOUR).replace('.000Z', 'Z'),
        cost: [0, 0.0083, 0.00415, 0, 0, 0][i],
        usage: { gbs: [0, 1000, 500, 0, 0, 0][i] },
      })),
    });
  });

  it('refuses a re-sent id with another payload, accepting nothing of that request', async () => {
    await ingest(h, t, [event('c-1')]);
    const res = await ingest(h, t, [event('c-new'), event('c-1', { quantity: 999 })]);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ error: 'conflict', index: 1, field: 'id' });
    // c-new was not accepted by the refused request: sending it now is new.
    expect((await ingest(h, t, [event('c-new')])).json()).toEqual({ accepted: 1, duplicates: 0 });
    const twice = await ingest(h, t, [event('c-2'), event('c-2', { quantity: 1 })]);
    expect(twice.statusCode).toBe(409);
  });

  it('knows ids accepted by earlier releases, whose ledger rows hold the earlier digest', async () => {
    // Rows as a release before the current digest wrote them: SHA-256 based, below DIGEST_MARK.
    const earlier = [event('old-1'), event('old-2', { resourceName: 'web\\2', timestamp: '2026-03-02T03:00:00+02:00' })];
    const parsed = parseUsageEvents({ events: earlier }, Date.now());
    for (const [i, input] of earlier.entries()) {
      const legacy = legacyPayloadDigest(parsed[i]);
      expect(legacy).toBeLessThan(DIGEST_MARK);
      await h.pg.query('INSERT INTO usage_event_ledger (event_key, payload_hash) VALUES ($1, $2)', [keyOf(t.accountId, input.id), String(legacy)]);
    }
    // Re-sent as they were (old-2 through the general reading: its name has an escape): duplicates.
    expect((await ingest(h, t, [...earlier, event('old-3')])).json()).toEqual({ accepted: 1, duplicates: 2 });
    // Re-sent with another payload: a conflict, whichever digest the ledger holds.
    for (const changed of [event('old-1', { quantity: 7 }), event('old-2', { resourceName: 'web\\2', timestamp: '2026-03-02T03:00:00+02:00', quantity: 7 }), event('old-3', { quantity: 7 })]) {
      const res = await ingest(h, t, [changed]);
      expect(res.statusCode).toBe(409);
      expect(res.json()).toMatchObject({ index: 0, field: 'id', message: expect.stringContaining(`'${changed.id}'`) });
    }
  });

  it('names the index and field of a bad event', async () => {
    const res = await ingest(h, t, [event('b-1'), event('b-2', { quantity: -1 })]);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'bad_request', index: 1, field: 'quantity', message: expect.stringContaining('events[1].quantity') });
    const unknownWorkspace = await ingest(h, t, [event('b-3', { workspace: 'not-ours' })]);
    expect(unknownWorkspace.statusCode).toBe(400);
    expect(unknownWorkspace.json()).toMatchObject({ index: 0, field: 'workspace' });
    const tooMany = await ingest(h, t, Array.from({ length: 10_001 }, (_, i) => event(`m-${i}`)));
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.json().message).toContain('10000');
  });

  it('refuses a body that is not JSON, and text it could not store, naming where', async () => {
    const post = (payload: string) =>
      h.call(t.admin.apiKey, { method: 'POST', url: `/v0/accounts/${t.accountId}/usage-events`, headers: { 'content-type': 'application/json' }, payload });
    const broken = await post('{"events": [');
    expect(broken.statusCode).toBe(400);
    expect(broken.json()).toMatchObject({ error: 'bad_request', message: expect.stringContaining('not valid JSON') });
    const nul = await post(JSON.stringify({ events: [event('n-1'), event('n-2', { resourceName: 'a\u0000b' })] }));
    expect(nul.statusCode).toBe(400);
    expect(nul.json()).toMatchObject({ index: 1, field: 'resourceName' });
    const later = await ingest(h, t, [event('w-a'), event('w-b', { workspace: 'nope-2' }), event('w-c', { workspace: 'nope-1' })]);
    expect(later.json()).toMatchObject({ index: 1, field: 'workspace', message: expect.stringContaining("'nope-2'") });
    // Nothing of the refused requests was accepted.
    expect((await ingest(h, t, [event('n-1'), event('w-a')])).json()).toEqual({ accepted: 2, duplicates: 0 });
  });

  it('accepts each id once when requests sharing many ids race, in any order', async () => {
    const ids = Array.from({ length: 3_000 }, (_, i) => `race-${i}`);
    const events = ids.map((id) => event(id));
    const answers = await Promise.all([ingest(h, t, events), ingest(h, t, [...events].reverse()), ingest(h, t, events.slice(1_000))]);
    expect(answers.map((answer) => answer.statusCode)).toEqual([202, 202, 202]);
    const results = answers.map((answer) => answer.json() as { accepted: number; duplicates: number });
    expect(results.reduce((sum, r) => sum + r.accepted, 0)).toBe(3_000);
    expect(results.reduce((sum, r) => sum + r.duplicates, 0)).toBe(3_000 + 2_000);
  });

  it('takes ledger keys in key order, so a writer holding some of them is waited for, not deadlocked', async () => {
    // Two events whose keys sort a < b, sent as [b, a].
    const [a, b] = ['lock-1', 'lock-2', 'lock-3']
      .map((id) => ({ id, key: keyOf(t.accountId, id) }))
      .sort((x, y) => (x.key < y.key ? -1 : 1))
      .slice(0, 2);
    const parsed = parseUsageEvents({ events: [event(a.id), event(b.id)] }, Date.now());
    const digest = (i: number) => String(payloadDigest(parsed[i]));
    // Another writer (as a concurrent request would) holds key a, uncommitted.
    const writer = await h.pg.connect();
    try {
      await writer.query('BEGIN');
      await writer.query('INSERT INTO usage_event_ledger (event_key, payload_hash) VALUES ($1, $2)', [a.key, digest(0)]);
      const request = ingest(h, t, [event(b.id), event(a.id)]);
      await eventually('the request waiting on key a', async () => {
        const { rows } = await h.pg.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'COPY usage_event_ledger%'");
        return rows.length > 0 ? true : undefined;
      });
      // The request waits on key a and has not taken b: the writer can take b as well. Had the
      // request taken b first, this would be a deadlock and one of the two would fail.
      await writer.query('INSERT INTO usage_event_ledger (event_key, payload_hash) VALUES ($1, $2)', [b.key, digest(1)]);
      await writer.query('COMMIT');
      const answer = await request;
      expect(answer.statusCode).toBe(202);
      expect(answer.json()).toEqual({ accepted: 0, duplicates: 2 });
    } finally {
      await writer.query('ROLLBACK').catch(() => undefined);
      writer.release();
    }
  });

  it('is reserved to account admins of that account', async () => {
    const asWorkspaceAdmin = await h.call(t.workspaceAdmin.apiKey, {
      method: 'POST',
      url: `/v0/accounts/${t.accountId}/usage-events`,
      payload: { events: [event('w-1')] },
    });
    expect(asWorkspaceAdmin.statusCode).toBe(403);
    expect(asWorkspaceAdmin.json().error).toBe('access_denied');
    const other = await createBillingTenant(h.pg);
    const foreign = await h.call(other.admin.apiKey, { method: 'POST', url: `/v0/accounts/${t.accountId}/usage-events`, payload: { events: [] } });
    expect(foreign.statusCode).toBe(404);
  });
});

describe('OpenAPI', () => {
  it('documents the billing routes', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const paths = Object.keys(res.json().paths);
    for (const path of ['/v0/accounts/{accountId}/metrics', '/v0/accounts/{accountId}/metrics/enums/group-by', '/v0/accounts/{accountId}/metrics/enums/resource-types', '/v0/accounts/{accountId}/usage-events']) {
      expect(paths).toContain(path);
    }
  });
});
