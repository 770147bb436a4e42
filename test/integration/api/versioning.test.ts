import { createTenant, startTestApp, type TestApp, type TestTenant } from '../../helpers/platform';

let t: TestApp;
let tenant: TestTenant;

beforeAll(async () => {
  t = await startTestApp();
  tenant = await createTenant(t.app.pg, 'ver');
});
afterAll(() => t.close());

const get = (url: string, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${tenant.admin.apiKey}`, ...headers } });

describe('Service-Version', () => {
  test('absent: served by the earliest stable version, which the response names', async () => {
    const res = await get('/v0/accounts');
    expect(res.statusCode).toBe(200);
    expect(res.headers['service-version']).toBe('2026-04-16');
  });

  test('a supported version is served and echoed', async () => {
    const res = await get('/v0/accounts', { 'service-version': '2026-04-16' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['service-version']).toBe('2026-04-16');
  });

  test.each(['2026-04-17', '2026-04-16.preview', '1999-01-01'])('unsupported %s: 400 invalid_api_version naming it', async (version) => {
    const res = await get('/v0/accounts', { 'service-version': version });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.error).toBe('invalid_api_version');
    expect(body.message).toContain(version);
    expect(body.message).toContain('2026-04-16');
  });

  test.each(['latest', '16-04-2026', '2026-02-30', 'v0'])('malformed %s: 400 invalid_api_version', async (version) => {
    const res = await get('/v0/accounts', { 'service-version': version });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid_api_version', message: expect.stringContaining(version) });
  });

  test('the version is checked on every versioned route, before credentials', async () => {
    for (const url of ['/v0/agents', '/v0/models', '/v0/workspaces', `/v0/accounts/${tenant.accountId}`]) {
      const res = await t.app.inject({ method: 'GET', url, headers: { 'service-version': 'nope' } });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe('invalid_api_version');
    }
    const token = await t.app.inject({ method: 'POST', url: '/v0/oauth/token', headers: { 'service-version': '2020-01-01' }, payload: {} });
    expect(token.json().error).toBe('invalid_api_version');
  });

  test('unversioned routes ignore the header', async () => {
    for (const url of ['/.well-known/jwks.json', '/.well-known/openid-configuration', '/openapi.json']) {
      const res = await t.app.inject({ method: 'GET', url, headers: { 'service-version': 'nope' } });
      expect(res.statusCode).toBe(200);
    }
  });
});
