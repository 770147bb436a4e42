import { createTenant, startTestApp, type TestApp } from '../../helpers/platform';
import { freePort } from '../../helpers/ports';

jest.setTimeout(60_000);

/**
 * While a local service restarts, requests that need it get a 503 (with Retry-After: a meter
 * retries its batch), not a 500 that reads like a bug; what does not need it keeps working.
 */
describe('a backing service out of reach', () => {
  let apps: TestApp[] = [];
  afterEach(async () => {
    await Promise.all(apps.map((t) => t.close()));
    apps = [];
  });

  test('PostgreSQL: a management request is a 503 worth retrying', async () => {
    const t = await startTestApp({ databaseUrl: `postgres://hangar:nothing@127.0.0.1:${await freePort()}/hangar` });
    apps.push(t);
    const reply = await t.call('hgr_whatever', { method: 'GET', url: '/v0/workspaces' });
    expect(reply.statusCode).toBe(503);
    expect(reply.headers['retry-after']).toBe('1');
    expect(reply.json()).toEqual({ error: 'unavailable', message: 'a service the platform depends on is unavailable; retry shortly' });
  });

  test('ClickHouse: a metrics query is a 503; usage ingestion, which goes to the outbox, is accepted', async () => {
    const t = await startTestApp({ clickhouseUrl: `http://hangar:nothing@127.0.0.1:${await freePort()}/` });
    apps.push(t);
    const tenant = await createTenant(t.app.pg, 'ch-away');
    const metrics = await t.call(tenant.admin.apiKey, {
      method: 'GET',
      url: `/v0/accounts/${tenant.accountId}/metrics?startTime=2026-04-01T00:00:00Z&endTime=2026-04-02T00:00:00Z`,
    });
    expect(metrics.statusCode).toBe(503);
    expect(metrics.json().error).toBe('unavailable');
    const event = { id: 'ch-away-1', timestamp: '2026-04-01T10:00:00Z', workspace: tenant.workspace, resourceType: 'sandbox', resourceName: 'web', billingDimension: 'sandbox_compute_runtime_gbs', quantity: 1 };
    const ingested = await t.call(tenant.admin.apiKey, { method: 'POST', url: `/v0/accounts/${tenant.accountId}/usage-events`, payload: { events: [event] } });
    expect(ingested.statusCode).toBe(202);
  });
});
