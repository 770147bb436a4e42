import { ConnectionStore } from '../../../store/connections';
import { captureLogs } from '../../helpers/log-capture';
import { createTenant, startTestApp, type TestApp, type TestTenant } from '../../helpers/platform';

/** Every log line the app writes, at the most verbose level, to prove no secret reaches them. */
const logs = captureLogs();
const logLines = logs.lines;
let t: TestApp;
let tenant: TestTenant;
let other: TestTenant;

beforeAll(async () => {
  t = await startTestApp({}, { logLevel: 'trace', logStream: logs.stream });
  tenant = await createTenant(t.app.pg, 'conn');
  other = await createTenant(t.app.pg, 'conn-other');
});
afterAll(() => t.close());

const secrets = () => ({
  CLIENT_ID: `client-${Math.random().toString(36).slice(2)}.apps.example`,
  CLIENT_SECRET: `client-secret-${Math.random().toString(36).slice(2)}-XYZW`,
  REFRESH_TOKEN: `refresh-${Math.random().toString(36).slice(2)}-tail`,
});
const connection = (name: string, secret: Record<string, string>, integration = 'email') => ({
  metadata: { name, displayName: `Mail of ${name}` },
  spec: { integration, secret },
});
const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown, who: TestTenant = tenant) =>
  t.call(who.admin.apiKey, { method, url, workspace: who.workspace, ...(payload ? { payload: payload as Record<string, unknown> } : {}) });

test('a connection is created with its secrets sealed at rest and masked in every response', async () => {
  const secret = secrets();
  const created = await call('POST', '/v0/integrations/connections', connection('mail-ada', secret));
  expect(created.statusCode).toBe(200);
  expect(created.json()).toEqual({
    metadata: expect.objectContaining({ name: 'mail-ada', displayName: 'Mail of mail-ada', workspace: tenant.workspace, createdBy: tenant.admin.clientId }),
    spec: { integration: 'email', secret: { CLIENT_ID: `********${secret.CLIENT_ID.slice(-4)}`, CLIENT_SECRET: `********XYZW`, REFRESH_TOKEN: `********tail` } },
  });
  const fetched = await call('GET', '/v0/integrations/connections/mail-ada');
  const listed = await call('GET', '/v0/integrations/connections');
  expect(listed.json()).toEqual([fetched.json()]);
  for (const body of [created.body, fetched.body, listed.body]) for (const value of Object.values(secret)) expect(body).not.toContain(value);

  const row = (name: string) => t.app.pg.query('SELECT * FROM integration_connections WHERE workspace_id = $1 AND name = $2', [tenant.workspaceId, name]);
  const { rows } = await row('mail-ada');
  for (const value of Object.values(secret)) expect(JSON.stringify(rows[0])).not.toContain(value);
  const store = new ConnectionStore(t.app.pg, t.app.secrets);
  expect(await store.openSecrets(rows[0])).toEqual(secret);
  // Bound to its row: the same ciphertext on another row does not open.
  await call('POST', '/v0/integrations/connections', connection('mail-copy', secrets()));
  const copy = (await row('mail-copy')).rows[0];
  await t.app.pg.query('UPDATE integration_connections SET sealed_secret = $1 WHERE id = $2', [rows[0].sealed_secret, copy.id]);
  await expect(store.openSecrets(copy)).rejects.toThrow();
});

test('validation names the unknown integration, the missing or unknown secret, the missing field', async () => {
  const bad = async (payload: unknown, message: RegExp) => {
    const res = await call('POST', '/v0/integrations/connections', payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'bad_request', message: expect.stringMatching(message) });
  };
  const { REFRESH_TOKEN: _dropped, ...noRefresh } = secrets();
  await bad(connection('c1', secrets(), 'carrier-pigeon'), /spec\.integration: unknown integration 'carrier-pigeon'/);
  await bad(connection('c1', noRefresh), /spec\.secret\.REFRESH_TOKEN is required/);
  await bad(connection('c1', { ...noRefresh, CLIENT_SECRET: '' }), /spec\.secret\.CLIENT_SECRET/);
  await bad(connection('c1', { ...secrets(), API_KEY: 'x' }), /spec\.secret\.API_KEY is not a secret of integration 'email'/);
  await bad({ metadata: { name: 'c1' }, spec: { integration: 'email', secret: secrets() } }, /body\.metadata\.displayName is required/);
  await bad({ metadata: { name: 'c1', displayName: 'x' }, spec: { integration: 'email' } }, /body\.spec\.secret is required/);
  await bad(connection('Bad_Name', secrets()), /body\.metadata\.name/);

  await call('POST', '/v0/integrations/connections', connection('mail-dup', secrets()));
  const dup = await call('POST', '/v0/integrations/connections', connection('mail-dup', secrets()));
  expect(dup.statusCode).toBe(409);
  expect(dup.json()).toEqual(expect.objectContaining({ error: 'conflict', code: 409 }));
});

test('an update keeps secrets sent back masked, replaces new ones, and cannot change the integration', async () => {
  const secret = secrets();
  const created = (await call('POST', '/v0/integrations/connections', connection('mail-upd', secret))).json();
  const store = new ConnectionStore(t.app.pg, t.app.secrets);
  const row = async () => (await store.get(tenant.workspaceId, 'mail-upd'))!;

  // A client that read the connection and sends it back changes nothing.
  const echoed = await call('PUT', '/v0/integrations/connections/mail-upd', { ...created, metadata: { ...created.metadata, displayName: 'Renamed' } });
  expect(echoed.statusCode).toBe(200);
  expect(echoed.json().metadata.displayName).toBe('Renamed');
  expect(await store.openSecrets(await row())).toEqual(secret);

  const rotated = { ...created.spec.secret, REFRESH_TOKEN: 'refresh-rotated-value-9876' };
  const replaced = await call('PUT', '/v0/integrations/connections/mail-upd', { metadata: { name: 'mail-upd', displayName: 'Renamed' }, spec: { secret: rotated } });
  expect(replaced.json().spec.secret.REFRESH_TOKEN).toBe('********9876');
  expect(await store.openSecrets(await row())).toEqual({ ...secret, REFRESH_TOKEN: 'refresh-rotated-value-9876' });

  const keep = await call('PUT', '/v0/integrations/connections/mail-upd', { metadata: { name: 'mail-upd', displayName: 'Again' } });
  expect(keep.statusCode).toBe(200);
  expect((await store.openSecrets(await row())).REFRESH_TOKEN).toBe('refresh-rotated-value-9876');

  const switched = await call('PUT', '/v0/integrations/connections/mail-upd', { metadata: { name: 'mail-upd', displayName: 'x' }, spec: { integration: 'other' } });
  expect(switched.statusCode).toBe(400);
  expect(switched.json().message).toMatch(/spec\.integration cannot change/);
  const dropped = await call('PUT', '/v0/integrations/connections/mail-upd', { metadata: { name: 'mail-upd', displayName: 'x' }, spec: { secret: { CLIENT_ID: 'only' } } });
  expect(dropped.statusCode).toBe(400);
  expect(dropped.json().message).toMatch(/spec\.secret\.CLIENT_SECRET is required/);
  expect((await call('PUT', '/v0/integrations/connections/nope', { metadata: { name: 'nope', displayName: 'x' } })).statusCode).toBe(404);
});

test('functions bind only to existing connections of their workspace, with consistent mcp types', async () => {
  await call('POST', '/v0/integrations/connections', connection('mail-fn', secrets()));
  const fn = (name: string, spec: Record<string, unknown>) => ({ metadata: { name, displayName: name }, spec });
  const mcp = (connections: string[]) => ({ type: 'mcp', integrationConnections: connections, runtime: { type: 'mcp' } });

  const missing = await call('POST', '/v0/functions', fn('mailer-a', mcp(['mail-fn', 'mail-ghost'])));
  expect(missing.statusCode).toBe(400);
  expect(missing.json().message).toMatch(/spec\.integrationConnections: connection 'mail-ghost' does not exist/);
  expect((await call('GET', '/v0/functions/mailer-a')).statusCode).toBe(404);

  const wrongType = await call('POST', '/v0/functions', fn('mailer-a', { ...mcp(['mail-fn']), type: 'http' }));
  expect(wrongType.json().message).toMatch(/spec\.type must be 'mcp'/);
  const noRuntime = await call('POST', '/v0/functions', fn('mailer-a', { type: 'mcp', integrationConnections: ['mail-fn'] }));
  expect(noRuntime.statusCode).toBe(400);
  expect(noRuntime.json().message).toMatch(/spec\.runtime\.type is required/);

  // Another workspace's connection of the same name does not count.
  await call('POST', '/v0/integrations/connections', connection('mail-theirs', secrets()), other);
  const foreign = await call('POST', '/v0/functions', fn('mailer-b', mcp(['mail-theirs'])));
  expect(foreign.statusCode).toBe(400);

  const created = await call('POST', '/v0/functions', fn('mailer-a', mcp(['mail-fn'])));
  expect(created.statusCode).toBe(200);
  expect(created.json()).toEqual(
    // The integration's MCP server is the platform's own code: it records `base`, the host's folders, whose Node it is built for.
    expect.objectContaining({ metadata: expect.objectContaining({ url: `${t.config.runUrl}/${tenant.workspace}/functions/mailer-a/mcp` }), spec: { ...mcp(['mail-fn']), runtime: { type: 'mcp', image: 'base' } } }),
  );
  const rebind = await call('PUT', '/v0/functions/mailer-a', fn('mailer-a', mcp(['mail-ghost'])));
  expect(rebind.statusCode).toBe(400);

  // A connection in use cannot be deleted; once its function is gone it can.
  const blocked = await call('DELETE', '/v0/integrations/connections/mail-fn');
  expect(blocked.statusCode).toBe(409);
  expect(blocked.json().message).toMatch(/used by function\(s\) 'mailer-a'/);
  expect((await call('DELETE', '/v0/functions/mailer-a')).statusCode).toBe(200);
  expect((await call('DELETE', '/v0/integrations/connections/mail-fn')).statusCode).toBe(200);
  expect((await call('GET', '/v0/integrations/connections/mail-fn')).statusCode).toBe(404);
});

test("one workspace never sees another's connections", async () => {
  await call('POST', '/v0/integrations/connections', connection('mail-private', secrets()), other);
  expect((await call('GET', '/v0/integrations/connections/mail-private')).statusCode).toBe(404);
  expect((await call('GET', '/v0/integrations/connections')).json().map((c: { metadata: { name: string } }) => c.metadata.name)).not.toContain('mail-private');
  const intrude = await t.call(tenant.admin.apiKey, { method: 'GET', url: '/v0/integrations/connections/mail-private', workspace: other.workspace });
  expect(intrude.statusCode).toBe(403);
  expect((await call('DELETE', '/v0/integrations/connections/mail-private')).statusCode).toBe(404);
});

test('the catalog describes the email integration with its scopes and configured provider', async () => {
  const res = await call('GET', '/v0/integrations/email');
  expect(res.json()).toEqual(
    expect.objectContaining({
      name: 'email',
      secrets: expect.arrayContaining([expect.objectContaining({ name: 'REFRESH_TOKEN', required: true })]),
      oauth: { authorizationUrl: t.config.integrations.email.authorizationUrl, scopes: ['https://www.googleapis.com/auth/gmail.send', 'openid', 'profile', 'email'] },
      mcp: { tools: ['send_email', 'whoami'] },
    }),
  );
  expect((await call('GET', '/v0/integrations')).json().map((i: { name: string }) => i.name)).toEqual(['email', 'openai', 'oci-registry']);
  expect((await call('GET', '/v0/integrations/fax')).statusCode).toBe(404);
});

test('no secret appears in any response or log line, including failed requests', async () => {
  const secret = secrets();
  const bodies: string[] = [];
  const record = async (res: Promise<{ body: string }>) => bodies.push((await res).body);
  const before = logLines.length;
  await record(call('POST', '/v0/integrations/connections', connection('mail-logged', secret)));
  await record(call('POST', '/v0/integrations/connections', connection('mail-logged', secret)));
  await record(call('POST', '/v0/integrations/connections', connection('mail-bad', { ...secret, EXTRA: secret.CLIENT_SECRET })));
  await record(call('POST', '/v0/integrations/connections', connection('mail-bad', { CLIENT_SECRET: secret.CLIENT_SECRET })));
  await record(call('PUT', '/v0/integrations/connections/mail-logged', { metadata: { name: 'mail-logged', displayName: 'x' }, spec: { secret: { ...secret, X: secret.REFRESH_TOKEN } } }));
  await record(call('GET', '/v0/integrations/connections/mail-logged'));
  await record(call('GET', `/v0/integrations/connections/mail-logged?token=${secret.REFRESH_TOKEN}`));
  await record(call('DELETE', '/v0/integrations/connections/mail-logged'));
  const logged = logLines.slice(before).join('');
  expect(logged).toContain('/v0/integrations/connections'); // the capture works
  for (const value of Object.values(secret)) {
    for (const body of bodies) expect(body).not.toContain(value);
    expect(logged).not.toContain(value);
  }
});
