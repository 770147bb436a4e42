import { addIdentity, createTenant, startTestApp, unique, type TestApp, type TestIdentity, type TestTenant } from '../../helpers/platform';

let t: TestApp;
let tenant: TestTenant;
let wsAdmin: TestIdentity;
let member: TestIdentity;

beforeAll(async () => {
  t = await startTestApp();
  tenant = await createTenant(t.app.pg, 'mgmt');
  wsAdmin = await addIdentity(t.app.pg, { accountId: tenant.accountId, workspaceId: tenant.workspaceId, role: 'admin' });
  member = await addIdentity(t.app.pg, { accountId: tenant.accountId, workspaceId: tenant.workspaceId, role: 'member' });
});
afterAll(() => t.close());

describe('accounts', () => {
  test("GET /v0/accounts lists the caller's account with its identifier and role", async () => {
    const admin = await t.call(tenant.admin.apiKey, { method: 'GET', url: '/v0/accounts' });
    expect(admin.json()).toEqual([{ id: tenant.accountId, name: 'mgmt', role: 'admin', createdAt: expect.any(String) }]);
    const plain = await t.call(member.apiKey, { method: 'GET', url: '/v0/accounts' });
    expect(plain.json()).toEqual([expect.objectContaining({ id: tenant.accountId, role: 'member' })]);
  });
});

describe('workspaces', () => {
  test('account admins create, list, get, update and delete workspaces', async () => {
    const name = unique('ws');
    const created = await t.call(tenant.admin.apiKey, { method: 'POST', url: '/v0/workspaces', payload: { name, displayName: 'Research', labels: { team: 'r' } } });
    expect(created.statusCode).toBe(200);
    expect(created.json()).toEqual(
      expect.objectContaining({ name, displayName: 'Research', labels: { team: 'r' }, accountId: tenant.accountId, role: 'admin', createdBy: tenant.admin.clientId }),
    );
    const dup = await t.call(tenant.admin.apiKey, { method: 'POST', url: '/v0/workspaces', payload: { name } });
    expect(dup.statusCode).toBe(409);
    expect(dup.json()).toEqual(expect.objectContaining({ error: 'conflict', code: 409 }));

    const names = (await t.call(tenant.admin.apiKey, { method: 'GET', url: '/v0/workspaces' })).json().map((w: { name: string }) => w.name);
    expect(names).toEqual(expect.arrayContaining([tenant.workspace, name]));

    const updated = await t.call(tenant.admin.apiKey, { method: 'PUT', url: `/v0/workspaces/${name}`, payload: { displayName: 'R&D' } });
    expect(updated.json()).toEqual(expect.objectContaining({ displayName: 'R&D', labels: { team: 'r' } }));

    const deleted = await t.call(tenant.admin.apiKey, { method: 'DELETE', url: `/v0/workspaces/${name}` });
    expect(deleted.statusCode).toBe(200);
    expect((await t.call(tenant.admin.apiKey, { method: 'GET', url: `/v0/workspaces/${name}` })).statusCode).toBe(404);
  });

  test('workspace admins and members cannot create or delete workspaces', async () => {
    for (const who of [wsAdmin, member]) {
      const res = await t.call(who.apiKey, { method: 'POST', url: '/v0/workspaces', payload: { name: unique('nope') } });
      expect(res.statusCode).toBe(403);
      expect(res.json().error).toBe('access_denied');
      expect((await t.call(who.apiKey, { method: 'DELETE', url: `/v0/workspaces/${tenant.workspace}` })).statusCode).toBe(403);
    }
    expect((await t.call(member.apiKey, { method: 'PUT', url: `/v0/workspaces/${tenant.workspace}`, payload: { displayName: 'x' } })).statusCode).toBe(403);
    expect((await t.call(wsAdmin.apiKey, { method: 'PUT', url: `/v0/workspaces/${tenant.workspace}`, payload: { displayName: 'Main' } })).statusCode).toBe(200);
  });

  test('deleting a workspace removes its resources and memberships', async () => {
    const name = unique('gone');
    await t.call(tenant.admin.apiKey, { method: 'POST', url: '/v0/workspaces', payload: { name } });
    await t.call(tenant.admin.apiKey, { method: 'POST', url: '/v0/agents', workspace: name, payload: { metadata: { name: 'a1' } } });
    await t.call(tenant.admin.apiKey, { method: 'DELETE', url: `/v0/workspaces/${name}` });
    const left = await t.app.pg.query('SELECT count(*)::int AS n FROM resources r JOIN workspaces w ON w.id = r.workspace_id WHERE w.name = $1', [name]);
    expect(left.rows[0].n).toBe(0);
  });
});

describe('service accounts', () => {
  test('a workspace admin creates a service account whose secret is shown once and works at the token endpoint', async () => {
    const res = await t.call(wsAdmin.apiKey, { method: 'POST', url: '/v0/service_accounts', workspace: tenant.workspace, payload: { name: 'ci bot', role: 'member' } });
    expect(res.statusCode).toBe(200);
    const created = res.json();
    expect(created).toEqual(
      expect.objectContaining({ clientId: expect.stringMatching(/^hgc_/), clientSecret: expect.stringMatching(/^hgs_/), role: 'member', workspace: tenant.workspace, accountAdmin: false }),
    );
    const fetched = await t.call(wsAdmin.apiKey, { method: 'GET', url: `/v0/service_accounts/${created.clientId}` });
    expect(fetched.statusCode).toBe(200);
    expect(fetched.body).not.toContain(created.clientSecret);
    const stored = await t.app.pg.query('SELECT secret_hash FROM service_accounts WHERE client_id = $1', [created.clientId]);
    expect(stored.rows[0].secret_hash).not.toContain(created.clientSecret);

    const token = await t.app.inject({
      method: 'POST',
      url: '/v0/oauth/token',
      payload: { grant_type: 'client_credentials', client_id: created.clientId, client_secret: created.clientSecret },
    });
    expect(token.statusCode).toBe(200);

    const listed = await t.call(member.apiKey, { method: 'GET', url: '/v0/service_accounts', workspace: tenant.workspace });
    expect(listed.json().map((s: { clientId: string }) => s.clientId)).toEqual(expect.arrayContaining([created.clientId, member.clientId]));
    expect(listed.body).not.toContain('hgs_');
  });

  test('members cannot create service accounts; only account admins create account admins', async () => {
    const byMember = await t.call(member.apiKey, { method: 'POST', url: '/v0/service_accounts', workspace: tenant.workspace, payload: { name: 'x', role: 'member' } });
    expect(byMember.statusCode).toBe(403);
    const escalate = await t.call(wsAdmin.apiKey, {
      method: 'POST',
      url: '/v0/service_accounts',
      workspace: tenant.workspace,
      payload: { name: 'x', role: 'admin', accountAdmin: true },
    });
    expect(escalate.statusCode).toBe(403);
    const granted = await t.call(tenant.admin.apiKey, {
      method: 'POST',
      url: '/v0/service_accounts',
      workspace: tenant.workspace,
      payload: { name: 'x', role: 'admin', accountAdmin: true },
    });
    expect(granted.json().accountAdmin).toBe(true);
  });

  test('a workspace admin cannot mint keys for an account admin; members cannot mint keys for others', async () => {
    const forAdmin = await t.call(wsAdmin.apiKey, { method: 'POST', url: `/v0/service_accounts/${tenant.admin.clientId}/api_keys`, payload: { name: 'steal' } });
    expect(forAdmin.statusCode).toBe(403);
    const forPeer = await t.call(member.apiKey, { method: 'POST', url: `/v0/service_accounts/${wsAdmin.clientId}/api_keys`, payload: { name: 'steal' } });
    expect(forPeer.statusCode).toBe(403);
    const forMember = await t.call(wsAdmin.apiKey, { method: 'POST', url: `/v0/service_accounts/${member.clientId}/api_keys`, payload: { name: 'ok', expiresIn: '1d' } });
    expect(forMember.statusCode).toBe(200);
    const expiresAt = Date.parse(forMember.json().expiresAt);
    expect(expiresAt - Date.now()).toBeGreaterThan(23 * 3600 * 1000);
    expect(expiresAt - Date.now()).toBeLessThanOrEqual(24 * 3600 * 1000);
  });

  test('service accounts of another account are not found', async () => {
    const other = await createTenant(t.app.pg, 'mgmt-other');
    const res = await t.call(tenant.admin.apiKey, { method: 'GET', url: `/v0/service_accounts/${other.admin.clientId}` });
    expect(res.statusCode).toBe(404);
    const keys = await t.call(tenant.admin.apiKey, { method: 'POST', url: `/v0/service_accounts/${other.admin.clientId}/api_keys`, payload: { name: 'x' } });
    expect(keys.statusCode).toBe(404);
  });
});

describe('resource envelope', () => {
  test('create, get, list, update and delete an agent', async () => {
    const spec = { runtime: { memory: 512, envs: [{ name: 'MODE', value: 'fast' }] } };
    const created = await t.call(member.apiKey, {
      method: 'POST',
      url: '/v0/agents',
      workspace: tenant.workspace,
      payload: { metadata: { name: 'helper', displayName: 'Helper', labels: { env: 'dev' }, workspace: 'ignored' }, spec },
    });
    expect(created.statusCode).toBe(200);
    const body = created.json();
    expect(body.metadata).toEqual(
      expect.objectContaining({
        name: 'helper',
        displayName: 'Helper',
        labels: { env: 'dev' },
        workspace: tenant.workspace,
        url: `${t.config.runUrl}/${tenant.workspace}/agents/helper`,
        createdBy: member.clientId,
      }),
    );
    // Named no image: the default, base-image, is recorded in the stored spec.
    expect(body.spec).toEqual({ runtime: { ...spec.runtime, image: 'base-image' } });
    expect(body.status).toBe('UPLOADING');
    expect(body.events).toEqual([expect.objectContaining({ type: 'Normal', status: 'UPLOADING', message: expect.any(String), time: expect.any(String) })]);

    const dup = await t.call(member.apiKey, { method: 'POST', url: '/v0/agents', workspace: tenant.workspace, payload: { metadata: { name: 'helper' } } });
    expect(dup.statusCode).toBe(409);
    expect(dup.json()).toEqual(expect.objectContaining({ code: 409, error: 'conflict', message: expect.stringContaining("'helper'") }));

    const list = await t.call(member.apiKey, { method: 'GET', url: '/v0/agents', workspace: tenant.workspace });
    expect(Array.isArray(list.json())).toBe(true);
    expect(list.json().map((a: { metadata: { name: string } }) => a.metadata.name)).toContain('helper');

    const put = await t.call(member.apiKey, {
      method: 'PUT',
      url: '/v0/agents/helper',
      workspace: tenant.workspace,
      payload: { metadata: { name: 'helper', displayName: 'Helper v2' }, spec: { runtime: { memory: 1024 } } },
    });
    expect(put.statusCode).toBe(200);
    expect(put.json().metadata.displayName).toBe('Helper v2');
    expect(put.json().metadata.labels).toEqual({ env: 'dev' });
    // An update naming no image keeps the one recorded.
    expect(put.json().spec).toEqual({ runtime: { memory: 1024, image: 'base-image' } });

    const rename = await t.call(member.apiKey, { method: 'PUT', url: '/v0/agents/helper', workspace: tenant.workspace, payload: { metadata: { name: 'other' } } });
    expect(rename.statusCode).toBe(400);
    expect(rename.json().message).toContain('body.metadata.name');

    expect((await t.call(member.apiKey, { method: 'DELETE', url: '/v0/agents/helper', workspace: tenant.workspace })).statusCode).toBe(200);
    expect((await t.call(member.apiKey, { method: 'GET', url: '/v0/agents/helper', workspace: tenant.workspace })).statusCode).toBe(404);
    expect((await t.call(member.apiKey, { method: 'DELETE', url: '/v0/agents/helper', workspace: tenant.workspace })).statusCode).toBe(404);
    expect((await t.call(member.apiKey, { method: 'PUT', url: '/v0/agents/helper', workspace: tenant.workspace, payload: { metadata: { name: 'helper' } } })).statusCode).toBe(404);
  });

  test('GET /v0/models and GET /v0/agents are lists; the same name may exist once per kind', async () => {
    for (const kind of ['models', 'agents', 'functions', 'jobs']) {
      const res = await t.call(member.apiKey, { method: 'POST', url: `/v0/${kind}`, workspace: tenant.workspace, payload: { metadata: { name: 'same' } } });
      expect(res.statusCode).toBe(200);
    }
    const models = await t.call(member.apiKey, { method: 'GET', url: '/v0/models', workspace: tenant.workspace });
    expect(models.statusCode).toBe(200);
    expect(models.json().map((m: { metadata: { name: string } }) => m.metadata.name)).toEqual(['same']);
  });

  test('without X-Service-Workspace, a caller in exactly one workspace acts there; others must name one', async () => {
    expect((await t.call(member.apiKey, { method: 'GET', url: '/v0/agents' })).statusCode).toBe(200);
    const second = unique('two');
    await t.call(tenant.admin.apiKey, { method: 'POST', url: '/v0/workspaces', payload: { name: second } });
    const res = await t.call(tenant.admin.apiKey, { method: 'GET', url: '/v0/agents' });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toContain('X-Service-Workspace');
  });
});

describe('OpenAPI', () => {
  test('/openapi.json is generated from the route schemas and /docs serves the browser', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(doc.openapi).toMatch(/^3\./);
    for (const path of ['/v0/agents', '/v0/models', '/v0/accounts', '/v0/workspaces', '/v0/service_accounts', '/v0/oauth/token', '/v0/agents/{name}']) {
      expect(doc.paths[path]).toBeDefined();
    }
    expect(doc.paths['/v0/agents'].post.requestBody).toBeDefined();
    const docs = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-type']).toContain('text/html');
  });
});
