import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FastifyInstance } from 'fastify';
import { buildRunApp } from '../../../api/gateway/run-app';
import { ConnectionStore } from '../../../store/connections';
import { EMAIL_SEND_SCOPE } from '../../../domain/integrations/catalog';
import { provisioningWorkflowId } from '../../../domain/integrations/provisioning';
import { createCustomerBackend } from '../../../examples/customer-backend/backend';
import { authorizationCode, consent } from '../../fakes/oauth-consent';
import { FakeOAuthProvider, type FakeClient } from '../../fakes/oauth-provider';
import { captureLogs } from '../../helpers/log-capture';
import { freePort } from '../../helpers/ports';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { testRuntime } from '../../helpers/sandbox-runtime';
import { eventually, startControlWorker, startNodeWorker, type RunningWorker } from '../../helpers/workers';

jest.setTimeout(60_000);

const REDIRECT_URI = 'https://app.example/oauth/callback';
const oauthApp: FakeClient = { clientId: 'hangar-test.apps.example', clientSecret: `app-secret-${unique('s')}`, redirectUris: [REDIRECT_URI] };
const logs = captureLogs();
/** The worker's log lines (Temporal's default logger writes them to stderr), searched as well. */
const workerLogs: string[] = [];
const stderrWrite = process.stderr.write.bind(process.stderr);
/** Every response body of this file, searched for secrets at the end. */
const bodies: string[] = [];
const runs: { workflowId: string; runId: string }[] = [];

let provider: FakeOAuthProvider;
let t: TestApp;
let tenant: TestTenant;
let worker: RunningWorker;
let apiUrl: string;
let node: RunningWorker;
let runtime: ReturnType<typeof testRuntime>;
let gateway: FastifyInstance;
let runUrl: string;

beforeAll(async () => {
  jest.spyOn(process.stderr, 'write').mockImplementation(((chunk: string | Uint8Array, ...rest: []) => {
    workerLogs.push(String(chunk));
    return stderrWrite(chunk, ...rest);
  }) as typeof process.stderr.write);
  provider = await FakeOAuthProvider.start([oauthApp]);
  const taskQueue = unique('provisioning-test');
  t = await startTestApp({ taskQueue, integrations: { email: provider.endpoints } }, { logLevel: 'debug', logStream: logs.stream });
  apiUrl = await t.app.listen({ port: 0, host: '127.0.0.1' });
  tenant = await createTenant(t.app.pg, 'prov');
  worker = await startControlWorker(t.config, t.app.pg);
  runtime = testRuntime(t.config.dataDir);
  node = await startNodeWorker(t.config, runtime);
  gateway = await buildRunApp(t.config);
  runUrl = await gateway.listen({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  for (const sandbox of (await runtime?.list()) ?? []) await runtime.remove(sandbox.id).catch(() => undefined);
  await node?.stop();
  await gateway?.close();
  await worker?.stop();
  await t?.close();
  await provider?.close();
  jest.restoreAllMocks();
});

const api = async (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: Record<string, unknown>) => {
  const res = await t.call(tenant.admin.apiKey, { method, url, workspace: tenant.workspace, ...(payload ? { payload } : {}) });
  bodies.push(res.body);
  return res;
};

async function provision(tenantKey: string, code: string, overrides: Record<string, string> = {}) {
  const res = await api('POST', '/v0/integrations/provisionings', {
    integration: 'email',
    tenant: tenantKey,
    code,
    redirectUri: REDIRECT_URI,
    clientId: oauthApp.clientId,
    clientSecret: oauthApp.clientSecret,
    ...overrides,
  });
  expect(res.statusCode).toBe(202);
  const run = res.json();
  runs.push({ workflowId: provisioningWorkflowId(tenant.workspace, 'email', tenantKey), runId: run.id });
  return run;
}

const settled = (id: string) =>
  eventually(`provisioning ${id} to finish`, async () => {
    const run = (await api('GET', `/v0/integrations/provisionings/${id}`)).json();
    return run.status === 'RUNNING' ? undefined : run;
  });

const codeFor = (user: string, redirectUri = REDIRECT_URI) =>
  authorizationCode({ authorizationUrl: provider.endpoints.authorizationUrl, clientId: oauthApp.clientId, redirectUri, loginHint: user });

async function tenantResources(name: string) {
  const count = async (sql: string) => (await t.app.pg.query(sql, [tenant.workspaceId, name])).rows[0].n as number;
  return {
    connections: await count('SELECT count(*)::int AS n FROM integration_connections WHERE workspace_id = $1 AND name = $2'),
    functions: await count("SELECT count(*)::int AS n FROM resources WHERE workspace_id = $1 AND kind = 'functions' AND name = $2"),
  };
}

/** One call of the tenant server's `whoami` through run_url, in a session of its own. */
async function whoami(functionName: string): Promise<{ isError: boolean; text: string }> {
  const client = new McpClient({ name: 'provisioning-test', version: '1.0.0' });
  try {
    const transport = new StreamableHTTPClientTransport(new URL(`${runUrl}/${tenant.workspace}/functions/${functionName}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${tenant.admin.apiKey}` } },
    });
    await client.connect(transport);
    const result = await client.callTool({ name: 'whoami', arguments: {} });
    bodies.push(JSON.stringify(result));
    return { isError: Boolean(result.isError), text: (result.content as { text: string }[]).map((part) => part.text).join('\n') };
  } finally {
    await client.close();
  }
}

const deployed = (name: string) =>
  eventually(`function ${name} deployed`, async () => ((await api('GET', `/v0/functions/${name}`)).json().status === 'DEPLOYED' ? true : undefined), 60_000);

test("happy path: the example backend connects a user, and the tenant's MCP server sends email as them", async () => {
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  oauthApp.redirectUris.push(`${publicUrl}/oauth/callback`);
  const backend = createCustomerBackend({
    publicUrl,
    hangar: { baseUrl: apiUrl, apiKey: tenant.admin.apiKey, workspace: tenant.workspace },
    oauth: { clientId: oauthApp.clientId, clientSecret: oauthApp.clientSecret },
    pollIntervalMs: 100,
  });
  await new Promise<void>((resolve) => backend.server.listen(port, '127.0.0.1', resolve));
  try {
    // Steps 1-2: the backend sends the user to the provider with everything the flow needs.
    const toProvider = await fetch(`${publicUrl}/connect?user=alice&login_hint=alice@example.com`, { redirect: 'manual' });
    expect(toProvider.status).toBe(302);
    const authorize = new URL(toProvider.headers.get('location')!);
    expect(`${authorize.origin}${authorize.pathname}`).toBe(provider.endpoints.authorizationUrl);
    expect(Object.fromEntries(authorize.searchParams)).toEqual(
      expect.objectContaining({
        client_id: oauthApp.clientId,
        redirect_uri: `${publicUrl}/oauth/callback`,
        scope: `${EMAIL_SEND_SCOPE} openid profile email`,
        response_type: 'code',
        access_type: 'offline',
      }),
    );
    // Step 3: the user approves; the provider redirects back with a code.
    const toCallback = await fetch(authorize, { redirect: 'manual' });
    expect(toCallback.status).toBe(302);
    // Steps 4-6: one call to Hangar, then the user lands on the confirmation.
    const done = await fetch(toCallback.headers.get('location')!, { redirect: 'manual' });
    expect(done.status).toBe(302);
    const confirmation = await fetch(new URL(done.headers.get('location')!, publicUrl));
    const mcpUrl = `${t.config.runUrl}/${tenant.workspace}/functions/email-alice/mcp`;
    expect(await confirmation.text()).toContain(mcpUrl);
    expect(backend.tenants.get('alice')).toEqual({ tenant: 'alice', connectionName: 'email-alice', functionName: 'email-alice', mcpUrl });
  } finally {
    backend.server.closeAllConnections();
    await new Promise((resolve) => backend.server.close(resolve));
  }

  const exchange = provider.tokenRequests.find((request) => request.grantType === 'authorization_code' && request.status === 200);
  expect(exchange?.contentType).toBe('application/x-www-form-urlencoded');
  const connection = (await api('GET', '/v0/integrations/connections/email-alice')).json();
  expect(connection).toEqual(expect.objectContaining({ metadata: expect.objectContaining({ tenant: 'alice' }), spec: expect.objectContaining({ integration: 'email' }) }));
  const fn = (await api('GET', '/v0/functions/email-alice')).json();
  // The integration's server is the platform's code: it records and runs on base, the host's folders.
  expect(fn.spec).toEqual({ type: 'mcp', integrationConnections: ['email-alice'], runtime: { type: 'mcp', image: 'base' } });
  expect(fn.metadata.url).toBe(`${t.config.runUrl}/${tenant.workspace}/functions/email-alice/mcp`);
  // Provisioning deploys it like POST /v0/functions does: a revision of the built-in server.
  const revisions = await api('GET', '/v0/functions/email-alice/revisions');
  expect(revisions.statusCode).toBe(200);
  expect(revisions.json()).toHaveLength(1);

  // The last hop: the official MCP client through run_url to the hosted server, whose sandbox
  // has no network: its provider calls leave through the node's allow-listed egress.
  await eventually('the tenant function deployed', async () => ((await api('GET', '/v0/functions/email-alice')).json().status === 'DEPLOYED' ? true : undefined), 60_000);
  const client = new McpClient({ name: 'provisioning-test', version: '1.0.0' });
  try {
    const transport = new StreamableHTTPClientTransport(new URL(`${runUrl}/${tenant.workspace}/functions/email-alice/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${tenant.admin.apiKey}` } },
    });
    await client.connect(transport);
    const whoami = await client.callTool({ name: 'whoami', arguments: {} });
    expect(JSON.stringify(whoami.content)).toContain('alice@example.com');
    const result = await client.callTool({ name: 'send_email', arguments: { to: 'bob@example.org', subject: 'Hello from Alice', body: 'Sent by her MCP server.' } });
    expect(result.isError).toBeFalsy();
  } finally {
    await client.close();
  }
  expect(provider.received.at(-1)).toEqual(expect.objectContaining({ from: 'alice@example.com', to: 'bob@example.org', subject: 'Hello from Alice', text: 'Sent by her MCP server.' }));
});

test('without access_type=offline the provisioning fails clearly and leaves nothing behind', async () => {
  const code = await authorizationCode({ authorizationUrl: provider.endpoints.authorizationUrl, clientId: oauthApp.clientId, redirectUri: REDIRECT_URI, accessType: null });
  const run = await settled((await provision('no-offline', code)).id);
  expect(run).toEqual(expect.objectContaining({ status: 'FAILED', tenant: 'no-offline', error: expect.stringContaining('access_type=offline') }));
  expect(run.error).toMatch(/no refresh_token/);
  expect(await tenantResources('email-no-offline')).toEqual({ connections: 0, functions: 0 });
});

test('redirect_uri must match exactly: at the consent screen, and at the code exchange (not retried)', async () => {
  const refused = await consent({ authorizationUrl: provider.endpoints.authorizationUrl, clientId: oauthApp.clientId, redirectUri: `${REDIRECT_URI}/` });
  expect(refused.status).toBe(400);
  expect(refused.location).toBeUndefined();

  const code = await codeFor('dora@example.com');
  const before = provider.tokenRequests.length;
  const run = await settled((await provision('mismatch', code, { redirectUri: 'https://app.example/oauth/callback?x=1' })).id);
  expect(run.status).toBe('FAILED');
  expect(run.error).toMatch(/redirect_uri_mismatch/);
  expect(provider.tokenRequests.slice(before).map((request) => request.status)).toEqual([400]);
  expect(await tenantResources('email-mismatch')).toEqual({ connections: 0, functions: 0 });
});

test('provider 5xx answers are retried until the exchange succeeds', async () => {
  const code = await codeFor('erin@example.com');
  const before = provider.tokenRequests.length;
  provider.failTokenRequests(2, 503);
  const run = await settled((await provision('flaky', code)).id);
  expect(run).toEqual(expect.objectContaining({ status: 'SUCCEEDED', result: expect.objectContaining({ connectionName: 'email-flaky', functionName: 'email-flaky' }) }));
  expect(provider.tokenRequests.slice(before).map((request) => request.status)).toEqual([503, 503, 200]);
});

test('when the function cannot be created, the connection made before it is removed', async () => {
  // Someone else's function already has the name the tenant's server would get.
  const taken = await api('POST', '/v0/functions', { metadata: { name: 'email-collide', displayName: 'Unrelated' }, spec: { type: 'mcp', runtime: { type: 'mcp' } } });
  expect(taken.statusCode).toBe(200);
  const run = await settled((await provision('collide', await codeFor('fred@example.com'))).id);
  expect(run.status).toBe('FAILED');
  expect(run.error).toMatch(/function 'email-collide' already exists/);
  expect(await tenantResources('email-collide')).toEqual({ connections: 0, functions: 1 });
  // The user's own function as it was created: on the default image, recorded.
  expect((await api('GET', '/v0/functions/email-collide')).json().spec).toEqual({ type: 'mcp', runtime: { type: 'mcp', image: 'base-image' } });

  // The connection did exist in between: the saga created it and its compensation removed it.
  const history = await t.app.temporal.workflow.getHandle(provisioningWorkflowId(tenant.workspace, 'email', 'collide'), run.id).fetchHistory();
  const activities = (history.events ?? []).flatMap((event) => event.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
  expect(activities).toEqual(['exchangeAuthorizationCode', 'upsertTenantConnection', 'createTenantFunction', 'removeTenantConnection', 'recordProvisioningOutcome']);
});

test('provisioning one tenant twice, even concurrently, yields one connection and one server', async () => {
  const code = await codeFor('gina@example.com');
  const exchangesBefore = provider.grantCount('authorization_code');
  const [first, second] = await Promise.all([provision('twice', code), provision('twice', code)]);
  expect(second.id).toBe(first.id);
  const run = await settled(first.id);
  expect(run.status).toBe('SUCCEEDED');
  expect(provider.grantCount('authorization_code') - exchangesBefore).toBe(1);
  // A retried request with the same code gets the same run back.
  expect((await provision('twice', code)).id).toBe(first.id);

  // The user authorizes again later: a new run refreshes the same connection's refresh token.
  const again = await settled((await provision('twice', await codeFor('gina@example.com'))).id);
  expect(again.id).not.toBe(first.id);
  expect(again).toEqual(expect.objectContaining({ status: 'SUCCEEDED', result: run.result }));
  expect(await tenantResources('email-twice')).toEqual({ connections: 1, functions: 1 });
  const store = new ConnectionStore(t.app.pg, t.app.secrets);
  expect((await store.openSecrets((await store.get(tenant.workspaceId, 'email-twice'))!)).REFRESH_TOKEN).toBe(provider.latestRefreshToken());
});

test('bad requests are refused with the field named', async () => {
  const bad = async (payload: Record<string, unknown>, message: RegExp) => {
    const res = await api('POST', '/v0/integrations/provisionings', {
      integration: 'email',
      tenant: 'ok',
      code: 'c',
      redirectUri: REDIRECT_URI,
      clientId: 'id',
      clientSecret: 'secret',
      ...payload,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(message);
  };
  await bad({ integration: 'fax' }, /integration: unknown integration 'fax'/);
  await bad({ tenant: 'Not OK' }, /body\.tenant/);
  await bad({ code: undefined }, /body\.code is required/);
  expect((await api('GET', '/v0/integrations/provisionings/nope')).statusCode).toBe(404);
});

test('a tenant provisioned anew after its refresh token was revoked is served with the new token at once', async () => {
  const first = await settled((await provision('revoked', await codeFor('hank@example.com'))).id);
  expect(first.status).toBe('SUCCEEDED');
  await deployed('email-revoked');
  expect(JSON.parse((await whoami('email-revoked')).text)).toEqual(expect.objectContaining({ email: 'hank@example.com' }));

  // The user revokes the grant: the server's own error says to provision the tenant anew.
  provider.revokeRefreshToken(provider.latestRefreshToken()!);
  const refused = await whoami('email-revoked');
  expect(refused).toEqual({ isError: true, text: expect.stringMatching(/invalid_grant.*provisioned anew/) });

  const again = await settled((await provision('revoked', await codeFor('hank@example.com'))).id);
  expect(again.status).toBe('SUCCEEDED');
  // SUCCEEDED means the server bound to the connection runs with the new refresh token.
  const answer = await whoami('email-revoked');
  expect(answer.isError).toBe(false);
  expect(JSON.parse(answer.text)).toEqual(expect.objectContaining({ email: 'hank@example.com' }));
  expect((await api('GET', '/v0/functions/email-revoked/revisions')).json()).toHaveLength(2);
});

test("a provisioning workflow is found in Temporal by workspace, kind and the name of the resource it made", async () => {
  const run = await settled((await provision('findme', await codeFor('ivy@example.com'))).id);
  expect(run.status).toBe('SUCCEEDED');
  const query = `HangarWorkspace = '${tenant.workspace}' AND HangarResourceKind = 'provisioning' AND HangarResourceName = 'email-findme'`;
  const found = await eventually('the provisioning in the visibility store', async () => {
    const ids: string[] = [];
    for await (const execution of t.app.temporal.workflow.list({ query })) ids.push(execution.workflowId);
    return ids.length > 0 ? ids : undefined;
  }, 15_000);
  expect(found).toEqual([provisioningWorkflowId(tenant.workspace, 'email', 'findme')]);
});

test('after a provider outage the same unused code starts a new run; in progress or succeeded it stays one run; records can be deleted', async () => {
  const code = await codeFor('jay@example.com');
  // Every attempt of this run meets the outage, until it gives up.
  provider.failTokenRequests(1_000, 503);
  const outage = await provision('outage', code);
  expect((await provision('outage', code)).id).toBe(outage.id);
  const busy = await api('DELETE', `/v0/integrations/provisionings/${outage.id}`);
  expect(busy.statusCode).toBe(409);
  expect(busy.json().message).toMatch(/RUNNING/);
  const failed = await eventually(`provisioning ${outage.id} to fail`, async () => {
    const current = (await api('GET', `/v0/integrations/provisionings/${outage.id}`)).json();
    return current.status === 'RUNNING' ? undefined : current;
  }, 60_000);
  expect(failed).toEqual(expect.objectContaining({ status: 'FAILED', error: expect.stringMatching(/503/) }));
  provider.failTokenRequests(0);

  // The code was never exchanged: posting it again is a new run, which succeeds.
  const retried = await provision('outage', code);
  expect(retried.id).not.toBe(outage.id);
  expect((await settled(retried.id)).status).toBe('SUCCEEDED');
  expect((await provision('outage', code)).id).toBe(retried.id);

  // Deleting a record removes the record only: the tenant's connection and server stay.
  const deleted = await api('DELETE', `/v0/integrations/provisionings/${outage.id}`);
  expect(deleted.statusCode).toBe(200);
  expect(deleted.json()).toEqual(expect.objectContaining({ id: outage.id, status: 'FAILED' }));
  expect((await api('GET', `/v0/integrations/provisionings/${outage.id}`)).statusCode).toBe(404);
  expect((await api('DELETE', `/v0/integrations/provisionings/${outage.id}`)).statusCode).toBe(404);
  expect(await tenantResources('email-outage')).toEqual({ connections: 1, functions: 1 });
});

test('GET /v0/integrations/provisionings lists the workspace runs newest first, with limit and tenant filters, and nothing of other workspaces', async () => {
  const listed = await api('GET', '/v0/integrations/provisionings');
  expect(listed.statusCode).toBe(200);
  const all = listed.json() as { id: string; tenant: string; createdAt: string }[];
  const recorded = await t.app.pg.query<{ id: string }>('SELECT id FROM integration_provisionings WHERE workspace_id = $1', [tenant.workspaceId]);
  expect(new Set(all.map((run) => run.id))).toEqual(new Set(recorded.rows.map((row) => row.id)));
  expect(all.length).toBeGreaterThan(3);
  const created = all.map((run) => run.createdAt);
  expect(created).toEqual([...created].sort().reverse());

  expect((await api('GET', '/v0/integrations/provisionings?limit=2')).json()).toEqual(all.slice(0, 2));
  const twice = (await api('GET', '/v0/integrations/provisionings?tenant=twice')).json() as { tenant: string }[];
  expect(twice.length).toBe(2);
  expect(twice.every((run) => run.tenant === 'twice')).toBe(true);
  const bad = await api('GET', '/v0/integrations/provisionings?limit=0');
  expect(bad.statusCode).toBe(400);
  expect(bad.json().message).toMatch(/limit/);

  const other = await createTenant(t.app.pg, 'prov-other');
  const theirs = await t.call(other.admin.apiKey, { method: 'GET', url: '/v0/integrations/provisionings', workspace: other.workspace });
  expect(theirs.statusCode).toBe(200);
  expect(theirs.json()).toEqual([]);
  const foreign = await t.call(other.admin.apiKey, { method: 'DELETE', url: `/v0/integrations/provisionings/${all[0].id}`, workspace: other.workspace });
  expect(foreign.statusCode).toBe(404);
  expect((await api('GET', `/v0/integrations/provisionings/${all[0].id}`)).statusCode).toBe(200);
});

test('no secret, code or token appears in any response, log line or workflow history', async () => {
  expect(runs.length).toBeGreaterThan(5);
  const histories: string[] = [];
  const texts = (value: unknown): string[] => {
    if (value instanceof Uint8Array) return [Buffer.from(value).toString('utf8')];
    if (typeof value === 'string') return [value];
    if (value && typeof value === 'object') return Object.values(value).flatMap(texts);
    return [];
  };
  for (const run of runs) histories.push(texts(await t.app.temporal.workflow.getHandle(run.workflowId, run.runId).fetchHistory()).join('\n'));
  const history = histories.join('\n');
  expect(history).toContain('exchangeAuthorizationCode'); // the decoding works
  const logged = logs.lines.join('') + workerLogs.join('');
  expect(logged).toContain('/v0/integrations/provisionings');
  expect(logged).toContain('Activity failed'); // the worker's lines are there too
  const secrets = [oauthApp.clientSecret, ...provider.issuedSecrets()];
  expect(secrets.length).toBeGreaterThan(10);
  for (const secret of secrets) {
    expect(history).not.toContain(secret);
    expect(logged).not.toContain(secret);
    for (const body of bodies) expect(body).not.toContain(secret);
  }
});
