import { createTenant, startTestApp, type TestApp, type TestTenant } from '../../helpers/platform';

let t: TestApp;
let tenant: TestTenant;

beforeAll(async () => {
  t = await startTestApp({ bodyLimitBytes: 64 * 1024 });
  tenant = await createTenant(t.app.pg, 'err');
});
afterAll(() => t.close());

const send = (method: 'POST' | 'PUT' | 'GET' | 'DELETE', url: string, payload?: string | object, headers: Record<string, string> = {}) =>
  t.app.inject({
    method,
    url,
    payload,
    headers: {
      authorization: `Bearer ${tenant.admin.apiKey}`,
      'x-service-workspace': tenant.workspace,
      ...(typeof payload === 'string' ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
  });

function expectError(res: { statusCode: number; json(): any; body: string }, status: number, error: string, message?: string | RegExp) {
  expect(res.statusCode).toBe(status);
  const body = res.json();
  expect(body.error).toBe(error);
  expect(typeof body.message).toBe('string');
  if (message) expect(body.message).toMatch(message);
  expect(res.body).not.toMatch(/\bat .+\.(ts|js):\d+/);
}

describe('JSON errors everywhere', () => {
  test('unknown route: 404 JSON, with or without credentials', async () => {
    expectError(await send('GET', '/v0/nothing-here'), 404, 'not_found', /GET \/v0\/nothing-here/);
    expectError(await t.app.inject({ method: 'GET', url: '/nope?x=1' }), 404, 'not_found');
  });

  test('malformed JSON: 400', async () => {
    expectError(await send('POST', '/v0/agents', '{"metadata": {"name": "a"'), 400, 'invalid_json');
    expectError(await send('POST', '/v0/agents', '{"metadata": }'), 400, 'invalid_json');
  });

  test('a JSON content type with an empty body: 400', async () => {
    expectError(await send('POST', '/v0/agents', ''), 400, 'invalid_json');
  });

  test('body too large: 413', async () => {
    const huge = JSON.stringify({ metadata: { name: 'big' }, spec: { blob: 'x'.repeat(100 * 1024) } });
    expectError(await send('POST', '/v0/agents', huge), 413, 'payload_too_large');
  });

  test('unsupported content type: 415', async () => {
    expectError(await send('POST', '/v0/agents', 'name=a', { 'content-type': 'text/plain' }), 415, 'unsupported_media_type');
  });

  test('validation errors name the field', async () => {
    expectError(await send('POST', '/v0/agents', {}), 400, 'bad_request', /body\.metadata is required/);
    expectError(await send('POST', '/v0/agents', { metadata: {} }), 400, 'bad_request', /body\.metadata\.name is required/);
    expectError(await send('POST', '/v0/agents', { metadata: { name: 'Bad_Name' } }), 400, 'bad_request', /body\.metadata\.name/);
    expectError(await send('POST', '/v0/agents', { metadata: { name: 'a'.repeat(50) } }), 400, 'bad_request', /body\.metadata\.name/);
    expectError(await send('POST', '/v0/agents', { metadata: { name: 'ok', displayName: 'd'.repeat(64) } }), 400, 'bad_request', /displayName/);
    expectError(
      await send('POST', '/v0/agents', { metadata: { name: 'ok' }, spec: { runtime: { memory: 'lots' } } }),
      400,
      'bad_request',
      /body\.spec\.runtime\.memory/,
    );
    expectError(await send('POST', '/v0/agents', [1, 2]), 400, 'bad_request', /body/);
    expectError(await send('POST', '/v0/service_accounts', { name: 'x', role: 'owner' }), 400, 'bad_request', /body\.role/);
    expectError(await send('POST', '/v0/service_accounts', { name: 'x', role: 'member', rol: 1 }), 400, 'bad_request', /body\.rol is not a known field/);
  });

  test('NUL characters and unpaired surrogates: 400 naming the field, not a 500', async () => {
    expectError(
      await send('POST', '/v0/agents', { metadata: { name: 'nul', displayName: 'a\u0000b' } }),
      400,
      'bad_request',
      /body\.metadata\.displayName contains a NUL/,
    );
    expectError(
      await send('POST', '/v0/agents', '{"metadata": {"name": "sur", "displayName": "x\\ud800y"}}'),
      400,
      'bad_request',
      /body\.metadata\.displayName contains an unpaired surrogate/,
    );
    expectError(await send('POST', '/v0/agents', '{"metadata": {"name": "key"}, "spec": {"\\u0000": 1}}'), 400, 'bad_request', /NUL/);
  });

  test('odd but valid Unicode is stored and returned intact', async () => {
    const displayName = 'Агент 🤖 عربى 𝔘𝔫𝔦 e\u0301 \u200b';
    const created = await send('POST', '/v0/agents', { metadata: { name: 'unicode', displayName, labels: { 'lång': 'värde 😀' } } });
    expect(created.statusCode).toBe(200);
    const fetched = (await send('GET', '/v0/agents/unicode')).json();
    expect(fetched.metadata.displayName).toBe(displayName);
    expect(fetched.metadata.labels).toEqual({ 'lång': 'värde 😀' });
  });

  test('SQL-like input is data, never SQL', async () => {
    const sneaky = "x'); DROP TABLE resources; --";
    expectError(await send('POST', '/v0/agents', { metadata: { name: sneaky } }), 400, 'bad_request', /body\.metadata\.name/);
    const created = await send('POST', '/v0/agents', { metadata: { name: 'sql', displayName: sneaky, labels: { "' OR 1=1 --": sneaky } } });
    expect(created.statusCode).toBe(200);
    expect((await send('GET', '/v0/agents/sql')).json().metadata.displayName).toBe(sneaky);
    expectError(await send('GET', `/v0/agents/${encodeURIComponent("a' OR '1'='1")}`), 404, 'not_found');
    expectError(await send('GET', '/v0/agents', undefined, { 'x-service-workspace': "' OR 1=1 --" }), 403, 'access_denied');
    expect((await t.app.pg.query("SELECT to_regclass('resources') AS t")).rows[0].t).toBe('resources');
  });

  test('a path parameter that is far too long: 414, not a crash', async () => {
    expectError(await send('GET', `/v0/agents/${'a'.repeat(5000)}`), 414, 'uri_too_long');
  });

  test('an unknown account id: 404', async () => {
    expectError(await send('GET', '/v0/accounts/acc_doesnotexist'), 404, 'not_found');
  });
});
