import { SignJWT, generateKeyPair } from 'jose';
import { TokenService } from '../../../api/auth/tokens';
import { addIdentity, createTenant, startTestApp, type TestApp, type TestTenant } from '../../helpers/platform';

let t: TestApp;
let tenantA: TestTenant;
let tenantB: TestTenant;

// Starting the app and writing the fixtures can take longer than jest's 5 s hook limit on a busy machine.
beforeAll(async () => {
  t = await startTestApp();
  tenantA = await createTenant(t.app.pg, 'auth-a');
  tenantB = await createTenant(t.app.pg, 'auth-b');
}, 60_000);
afterAll(() => t.close());

const listWorkspaces = (headers: Record<string, string | undefined>) => t.app.inject({ method: 'GET', url: '/v0/workspaces', headers });

async function tokenFor(clientId: string, clientSecret: string): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/v0/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }).toString(),
  });
  expect(res.statusCode).toBe(200);
  return res.json().access_token;
}

function expectUnauthorized(res: { statusCode: number; json(): any }) {
  expect(res.statusCode).toBe(401);
  expect(res.json()).toEqual({ error: 'unauthorized', message: expect.any(String) });
}

describe('credential transport', () => {
  test('no credential is 401 with a JSON body', async () => {
    expectUnauthorized(await listWorkspaces({}));
  });

  test.each(['Basic abc', 'Bearer', 'Bearer ', 'Bearer a b', 'hgr_plain', 'Token hgr_x'])('malformed %p is 401', async (value) => {
    expectUnauthorized(await listWorkspaces({ authorization: value }));
    expectUnauthorized(await listWorkspaces({ 'x-service-authorization': value }));
  });

  test('an API key works in Authorization and in X-Service-Authorization, scheme case-insensitive', async () => {
    for (const headers of [
      { authorization: `Bearer ${tenantA.admin.apiKey}` },
      { 'x-service-authorization': `Bearer ${tenantA.admin.apiKey}` },
      { authorization: `bearer ${tenantA.admin.apiKey}` },
    ]) {
      const res = await listWorkspaces(headers);
      expect(res.statusCode).toBe(200);
      expect(res.json().map((w: { name: string }) => w.name)).toEqual([tenantA.workspace]);
    }
  });

  test('X-Service-Authorization wins when both headers are present', async () => {
    const res = await listWorkspaces({ authorization: 'Bearer hgr_wrong', 'x-service-authorization': `Bearer ${tenantB.admin.apiKey}` });
    expect(res.statusCode).toBe(200);
    expect(res.json().map((w: { name: string }) => w.name)).toEqual([tenantB.workspace]);
  });

  test('an unknown API key is 401', async () => {
    expectUnauthorized(await listWorkspaces({ authorization: 'Bearer hgr_' + 'A'.repeat(43) }));
  });
});

describe('API keys', () => {
  test('a revoked key stops working at once; other keys keep working', async () => {
    const member = await addIdentity(t.app.pg, { accountId: tenantA.accountId, workspaceId: tenantA.workspaceId, role: 'member' });
    const created = await t.call(member.apiKey, { method: 'POST', url: `/v0/service_accounts/${member.clientId}/api_keys`, payload: { name: 'second' } });
    expect(created.statusCode).toBe(200);
    const second = created.json();
    expect(second.apiKey).toMatch(/^hgr_/);

    const revoke = await t.call(tenantA.admin.apiKey, { method: 'DELETE', url: `/v0/service_accounts/${member.clientId}/api_keys/${second.id}` });
    expect(revoke.statusCode).toBe(200);
    expect(revoke.json().revokedAt).toEqual(expect.any(String));
    expect(revoke.json().apiKey).toBeUndefined();

    expectUnauthorized(await listWorkspaces({ authorization: `Bearer ${second.apiKey}` }));
    expect((await listWorkspaces({ authorization: `Bearer ${member.apiKey}` })).statusCode).toBe(200);
  });

  test('an expired key is 401', async () => {
    const member = await addIdentity(t.app.pg, { accountId: tenantA.accountId, workspaceId: tenantA.workspaceId, role: 'member' });
    await t.app.pg.query(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE principal_id = $1`, [member.id]);
    expectUnauthorized(await listWorkspaces({ authorization: `Bearer ${member.apiKey}` }));
  });

  test('the key is shown once: listings carry only its prefix', async () => {
    const res = await t.call(tenantA.admin.apiKey, { method: 'GET', url: `/v0/service_accounts/${tenantA.admin.clientId}/api_keys` });
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain(tenantA.admin.apiKey);
    expect(res.json()[0]).toEqual(expect.objectContaining({ prefix: tenantA.admin.apiKey.slice(0, 10), name: 'test' }));
  });
});

describe('OAuth client credentials and JWTs', () => {
  test('Basic auth, form fields and JSON all yield a token that works in both headers', async () => {
    const { clientId, clientSecret } = tenantA.admin;
    const basic = await t.app.inject({
      method: 'POST',
      url: '/v0/oauth/token',
      headers: {
        authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      payload: 'grant_type=client_credentials',
    });
    expect(basic.statusCode).toBe(200);
    expect(basic.headers['cache-control']).toBe('no-store');
    expect(basic.json()).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: t.config.tokenTtlSeconds });

    const json = await t.app.inject({
      method: 'POST',
      url: '/v0/oauth/token',
      payload: { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret },
    });
    expect(json.statusCode).toBe(200);

    const token = await tokenFor(clientId, clientSecret);
    const header = JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString());
    expect(header).toEqual(expect.objectContaining({ alg: 'ES256', kid: expect.any(String) }));
    for (const headers of [{ authorization: `Bearer ${token}` }, { 'x-service-authorization': `Bearer ${token}` }]) {
      const res = await listWorkspaces(headers);
      expect(res.statusCode).toBe(200);
      expect(res.json().map((w: { name: string }) => w.name)).toEqual([tenantA.workspace]);
    }
  });

  test('wrong secret, unknown client, missing fields and other grants are refused', async () => {
    const post = (payload: Record<string, string>) => t.app.inject({ method: 'POST', url: '/v0/oauth/token', payload });
    const wrong = await post({ grant_type: 'client_credentials', client_id: tenantA.admin.clientId, client_secret: 'nope' });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().error).toBe('invalid_client');
    expect((await post({ grant_type: 'client_credentials', client_id: 'hgc_unknown', client_secret: 'x' })).statusCode).toBe(401);
    expect((await post({ grant_type: 'client_credentials' })).json().error).toBe('invalid_request');
    const grant = await post({ grant_type: 'password', client_id: tenantA.admin.clientId, client_secret: tenantA.admin.clientSecret });
    expect(grant.statusCode).toBe(400);
    expect(grant.json().error).toBe('unsupported_grant_type');
  });

  test("an API key is exchanged for a token of its service account that expires no later than the key; a dead key, a missing or wrong type are refused", async () => {
    const exchange = (fields: Record<string, string>) =>
      t.app.inject({ method: 'POST', url: '/v0/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', ...fields }).toString() });
    const member = await addIdentity(t.app.pg, { accountId: tenantA.accountId, workspaceId: tenantA.workspaceId, role: 'member' });
    const asKey = { subject_token_type: 'urn:hangar:params:oauth:token-type:api-key' };
    const res = await exchange({ ...asKey, subject_token: member.apiKey });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.json()).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: t.config.tokenTtlSeconds, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token' });
    expect(res.body).not.toContain(member.apiKey);
    const token = res.json().access_token;
    expect(JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString())).toEqual(expect.objectContaining({ sub: member.id, client_id: member.clientId, account_id: tenantA.accountId }));
    const listed = await listWorkspaces({ authorization: `Bearer ${token}` });
    expect(listed.statusCode).toBe(200);
    expect(listed.json().map((w: { name: string }) => w.name)).toEqual([tenantA.workspace]);

    // A key with 90 s left gives a token of at most 90 s.
    await t.app.pg.query(`UPDATE api_keys SET expires_at = now() + interval '90 seconds' WHERE principal_id = $1`, [member.id]);
    const short = (await exchange({ ...asKey, subject_token: member.apiKey })).json();
    expect(short.expires_in).toBeGreaterThan(80);
    expect(short.expires_in).toBeLessThanOrEqual(90);
    const claims = JSON.parse(Buffer.from(short.access_token.split('.')[1], 'base64url').toString());
    expect(claims.exp - claims.iat).toBe(short.expires_in);

    await t.app.pg.query(`UPDATE api_keys SET revoked_at = now() WHERE principal_id = $1`, [member.id]);
    const revoked = await exchange({ ...asKey, subject_token: member.apiKey });
    expect(revoked.statusCode).toBe(400);
    expect(revoked.json().error).toBe('invalid_grant');
    const missing = await exchange(asKey);
    expect([missing.statusCode, missing.json().error_description]).toEqual([400, 'subject_token is required (the API key)']);
    const wrongType = await exchange({ subject_token: tenantA.admin.apiKey, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token' });
    expect(wrongType.statusCode).toBe(400);
    expect(wrongType.json().error_description).toContain('subject_token_type must be urn:hangar:params:oauth:token-type:api-key');
  });

  test('an expired token is 401', async () => {
    const expired = new TokenService(t.app.pg, t.app.secrets, t.config.baseUrl, -120);
    const { token } = await expired.issue({ sub: tenantA.admin.id, clientId: tenantA.admin.clientId, accountId: tenantA.accountId });
    expectUnauthorized(await listWorkspaces({ authorization: `Bearer ${token}` }));
  });

  test('a tampered token is 401', async () => {
    const token = await tokenFor(tenantA.admin.clientId, tenantA.admin.clientSecret);
    const [h, p, s] = token.split('.');
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    claims.account_id = tenantB.accountId;
    const forged = [h, Buffer.from(JSON.stringify(claims)).toString('base64url'), s].join('.');
    expectUnauthorized(await listWorkspaces({ authorization: `Bearer ${forged}` }));
  });

  test("alg 'none' is 401", async () => {
    const token = await tokenFor(tenantA.admin.clientId, tenantA.admin.clientSecret);
    const [h, p] = token.split('.');
    const header = { ...JSON.parse(Buffer.from(h, 'base64url').toString()), alg: 'none' };
    const unsigned = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${p}.`;
    expectUnauthorized(await listWorkspaces({ authorization: `Bearer ${unsigned}` }));
  });

  test('a token signed with another key under a published kid is 401', async () => {
    const jwks = (await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
    const { privateKey } = await generateKeyPair('ES256');
    const forged = await new SignJWT({ client_id: tenantA.admin.clientId, account_id: tenantA.accountId })
      .setProtectedHeader({ alg: 'ES256', kid: jwks.keys[0].kid })
      .setSubject(tenantA.admin.id)
      .setIssuer(t.config.baseUrl)
      .setAudience('hangar-api')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
    expectUnauthorized(await listWorkspaces({ authorization: `Bearer ${forged}` }));
  });

  test('a token for another audience or issuer is 401', async () => {
    for (const other of [
      new TokenService(t.app.pg, t.app.secrets, t.config.baseUrl, 300, 'another-api'),
      new TokenService(t.app.pg, t.app.secrets, 'https://elsewhere.example', 300),
    ]) {
      const { token } = await other.issue({ sub: tenantA.admin.id, clientId: tenantA.admin.clientId, accountId: tenantA.accountId });
      expectUnauthorized(await listWorkspaces({ authorization: `Bearer ${token}` }));
    }
  });

  test('a token of a deleted service account is 401', async () => {
    const doomed = await addIdentity(t.app.pg, { accountId: tenantA.accountId, workspaceId: tenantA.workspaceId, role: 'member' });
    const token = await tokenFor(doomed.clientId, doomed.clientSecret);
    const del = await t.call(tenantA.admin.apiKey, { method: 'DELETE', url: `/v0/service_accounts/${doomed.clientId}`, workspace: tenantA.workspace });
    expect(del.statusCode).toBe(200);
    expectUnauthorized(await listWorkspaces({ authorization: `Bearer ${token}` }));
    expectUnauthorized(await listWorkspaces({ authorization: `Bearer ${doomed.apiKey}` }));
  });

  test('after key rotation old tokens still verify and new tokens carry the new kid', async () => {
    const before = await tokenFor(tenantA.admin.clientId, tenantA.admin.clientSecret);
    const newKid = await t.app.tokens.rotate();
    const after = await tokenFor(tenantA.admin.clientId, tenantA.admin.clientSecret);
    expect(JSON.parse(Buffer.from(after.split('.')[0], 'base64url').toString()).kid).toBe(newKid);
    expect((await listWorkspaces({ authorization: `Bearer ${before}` })).statusCode).toBe(200);
    expect((await listWorkspaces({ authorization: `Bearer ${after}` })).statusCode).toBe(200);
    const kids = (await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json().keys.map((k: { kid: string }) => k.kid);
    expect(kids).toContain(newKid);
    expect(kids.length).toBeGreaterThanOrEqual(2);
  });

  test('a freshly started node verifies concurrent tokens without a false 401', async () => {
    const token = await tokenFor(tenantA.admin.clientId, tenantA.admin.clientSecret);
    const fresh = new TokenService(t.app.pg, t.app.secrets, t.config.baseUrl, 300);
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => fresh.verify(token)));
    expect(results.map((r) => r.status)).toEqual(Array(8).fill('fulfilled'));
  });

  test('discovery documents describe the issuer, token endpoint and public keys only', async () => {
    const oidc = (await t.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
    expect(oidc).toEqual(
      expect.objectContaining({
        issuer: t.config.baseUrl,
        token_endpoint: `${t.config.baseUrl}/v0/oauth/token`,
        jwks_uri: `${t.config.baseUrl}/.well-known/jwks.json`,
        grant_types_supported: ['client_credentials', 'urn:ietf:params:oauth:grant-type:token-exchange'],
      }),
    );
    const jwks = (await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
    for (const key of jwks.keys) {
      expect(key).toEqual(expect.objectContaining({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig', kid: expect.any(String) }));
      expect(key.d).toBeUndefined();
    }
  });
});

describe('workspace isolation', () => {
  test("another account's workspace is refused without data, whatever the credential", async () => {
    const token = await tokenFor(tenantB.admin.clientId, tenantB.admin.clientSecret);
    for (const credential of [tenantB.admin.apiKey, token]) {
      const res = await t.call(credential, { method: 'GET', url: '/v0/agents', workspace: tenantA.workspace });
      expect(res.statusCode).toBe(403);
      expect(res.body).not.toContain(tenantA.workspaceId);
      const ws = await t.call(credential, { method: 'GET', url: `/v0/workspaces/${tenantA.workspace}` });
      expect(ws.statusCode).toBe(404);
    }
  });

  test('a workspace that does not exist gets the same answer as one of another tenant', async () => {
    const missing = await t.call(tenantB.admin.apiKey, { method: 'GET', url: '/v0/agents', workspace: 'no-such-workspace' });
    const foreign = await t.call(tenantB.admin.apiKey, { method: 'GET', url: '/v0/agents', workspace: tenantA.workspace });
    expect(missing.statusCode).toBe(foreign.statusCode);
    expect(missing.json().error).toBe(foreign.json().error);
  });

  test('a member of one workspace cannot act in a sibling workspace of the same account', async () => {
    const created = await t.call(tenantA.admin.apiKey, { method: 'POST', url: '/v0/workspaces', payload: { name: `${tenantA.workspace}-2` } });
    expect(created.statusCode).toBe(200);
    const member = await addIdentity(t.app.pg, { accountId: tenantA.accountId, workspaceId: tenantA.workspaceId, role: 'member' });
    const agent = await t.call(tenantA.admin.apiKey, {
      method: 'POST',
      url: '/v0/agents',
      workspace: `${tenantA.workspace}-2`,
      payload: { metadata: { name: 'hidden' } },
    });
    expect(agent.statusCode).toBe(200);
    const res = await t.call(member.apiKey, { method: 'GET', url: '/v0/agents/hidden', workspace: `${tenantA.workspace}-2` });
    expect(res.statusCode).toBe(403);
    expect(res.body).not.toContain('hidden');
    const list = await t.call(member.apiKey, { method: 'GET', url: '/v0/workspaces' });
    expect(list.json().map((w: { name: string }) => w.name)).toEqual([tenantA.workspace]);
  });

  test("a resource name in one workspace does not reveal another workspace's resource", async () => {
    await t.call(tenantA.admin.apiKey, { method: 'POST', url: '/v0/models', workspace: tenantA.workspace, payload: { metadata: { name: 'shared-name' } } });
    const other = await t.call(tenantB.admin.apiKey, { method: 'GET', url: '/v0/models/shared-name', workspace: tenantB.workspace });
    expect(other.statusCode).toBe(404);
    const list = await t.call(tenantB.admin.apiKey, { method: 'GET', url: '/v0/models', workspace: tenantB.workspace });
    expect(list.json()).toEqual([]);
  });
});
