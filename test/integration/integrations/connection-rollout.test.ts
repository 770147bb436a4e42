import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import fc from 'fast-check';
import { ConnectionStore } from '../../../store/connections';
import { requestToken } from '../../../integrations/oauth/token-client';
import { authorizationCode } from '../../fakes/oauth-consent';
import { FakeOAuthProvider, type FakeClient } from '../../fakes/oauth-provider';
import { captureLogs } from '../../helpers/log-capture';
import { createTenant, startTestApp, type TestApp, type TestTenant } from '../../helpers/platform';
import { startWorkloadPlatform, stopRuntimeTest, type WorkloadPlatform } from '../../helpers/runtime-platform';
import { eventually } from '../../helpers/workers';

// A change of an integration connection reaches every MCP server bound to it: the servers hold
// the connection's secrets in their environment, so a PUT of new secrets restarts them (a new
// revision) and returns once they serve with the new secrets.

jest.setTimeout(180_000);

const REDIRECT_URI = 'https://app.example/oauth/callback';
const oauthApp: FakeClient = { clientId: 'rollout-test.apps.example', clientSecret: 'rollout-app-secret-5c1e93d0a7', redirectUris: [REDIRECT_URI] };
const CONNECTION = 'mail';
const SERVERS = ['mail-a', 'mail-b'];
const logs = captureLogs();
/** Every response body of this file, searched for secrets at the end. */
const bodies: string[] = [];

let provider: FakeOAuthProvider;
let t: TestApp;
let tenant: TestTenant;
let platform: WorkloadPlatform;

beforeAll(async () => {
  provider = await FakeOAuthProvider.start([oauthApp]);
  t = await startTestApp({ taskQueue: `rollout-${Date.now()}`, integrations: { email: provider.endpoints } }, { logLevel: 'debug', logStream: logs.stream });
  tenant = await createTenant(t.app.pg, 'rollout');
  platform = await startWorkloadPlatform(t);
});

afterAll(async () => {
  await stopRuntimeTest({ ...platform, t });
  await provider?.close();
});

const api = async (method: 'GET' | 'POST' | 'PUT', url: string, payload?: Record<string, unknown>) => {
  const res = await t.call(tenant.admin.apiKey, { method, url, workspace: tenant.workspace, ...(payload ? { payload } : {}) });
  bodies.push(res.body);
  return res;
};

/** Steps 2-4 of the tenant flow at the fake provider: a fresh refresh token of `user`. */
async function refreshTokenFor(user: string): Promise<string> {
  const code = await authorizationCode({ authorizationUrl: provider.endpoints.authorizationUrl, clientId: oauthApp.clientId, redirectUri: REDIRECT_URI, loginHint: user });
  const tokens = await requestToken(
    provider.endpoints.tokenUrl,
    { grant_type: 'authorization_code', code, client_id: oauthApp.clientId, client_secret: oauthApp.clientSecret, redirect_uri: REDIRECT_URI },
    { secrets: [] },
  );
  if (!tokens.refresh_token) throw new Error('no refresh token');
  return tokens.refresh_token;
}

const secretOf = (refreshToken: string) => ({ CLIENT_ID: oauthApp.clientId, CLIENT_SECRET: oauthApp.clientSecret, REFRESH_TOKEN: refreshToken });

/** The account a server acts as, asked through run_url in a session of its own; an error's text otherwise. */
async function whoami(server: string): Promise<string> {
  const client = new McpClient({ name: 'rollout-test', version: '1.0.0' });
  try {
    const transport = new StreamableHTTPClientTransport(new URL(`${platform.runUrl}/${tenant.workspace}/functions/${server}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${tenant.admin.apiKey}` } },
    });
    await client.connect(transport);
    const result = await client.callTool({ name: 'whoami', arguments: {} });
    const text = (result.content as { text: string }[]).map((part) => part.text).join('\n');
    bodies.push(text);
    return result.isError ? `error: ${text}` : (JSON.parse(text) as { email: string }).email;
  } finally {
    await client.close();
  }
}

const putSecret = (secret: Record<string, string>, displayName = 'Mail') =>
  api('PUT', `/v0/integrations/connections/${CONNECTION}`, { metadata: { name: CONNECTION, displayName }, spec: { secret } });

const revisionCount = async (server: string) => ((await api('GET', `/v0/functions/${server}/revisions`)).json() as unknown[]).length;

test('a PUT with a new REFRESH_TOKEN reaches every running server bound to the connection before it returns', async () => {
  const alice = await refreshTokenFor('alice@example.com');
  expect((await api('POST', '/v0/integrations/connections', { metadata: { name: CONNECTION, displayName: 'Mail' }, spec: { integration: 'email', secret: secretOf(alice) } })).statusCode).toBe(200);
  for (const server of SERVERS) {
    const created = await api('POST', '/v0/functions', { metadata: { name: server, displayName: server }, spec: { type: 'mcp', integrationConnections: [CONNECTION], runtime: { type: 'mcp' } } });
    expect(created.statusCode).toBe(200);
  }
  for (const server of SERVERS) {
    await eventually(`${server} deployed`, async () => ((await api('GET', `/v0/functions/${server}`)).json().status === 'DEPLOYED' ? true : undefined), 60_000);
    expect(await whoami(server)).toBe('alice@example.com');
  }

  // The connection now holds Bob's grant, and Alice's is revoked at the provider.
  const bob = await refreshTokenFor('bob@example.com');
  const put = await putSecret(secretOf(bob));
  provider.revokeRefreshToken(alice);
  expect(put.statusCode).toBe(200);
  for (const server of SERVERS) expect(await whoami(server)).toBe('bob@example.com');
  expect(put.json().status.rollout).toEqual(SERVERS.map((server) => ({ function: server, revision: 2, status: 'DEPLOYED' })));

  // Nothing but the display name changed: nothing restarts.
  const renamed = await putSecret(secretOf(bob), 'Mail of Bob');
  expect(renamed.statusCode).toBe(200);
  expect(renamed.json().status).toBeUndefined();
  for (const server of SERVERS) expect(await revisionCount(server)).toBe(2);
});

test('concurrent PUTs, in any order and overlap: once they have returned, every server acts with the refresh token stored last', async () => {
  const store = new ConnectionStore(t.app.pg, t.app.secrets);
  const users = ['carol@example.com', 'dave@example.com', 'erin@example.com'];
  await fc.assert(
    fc.asyncProperty(
      // Which users' grants are PUT, and how long each request waits before it is sent.
      fc.array(fc.record({ user: fc.constantFrom(...users), delayMs: fc.integer({ min: 0, max: 300 }) }), { minLength: 1, maxLength: 3 }),
      async (puts) => {
        const tokens = await Promise.all(puts.map(({ user }) => refreshTokenFor(user)));
        const answers = await Promise.all(
          puts.map(async ({ delayMs }, i) => {
            await new Promise((resolve) => setTimeout(resolve, delayMs));
            return putSecret(secretOf(tokens[i]));
          }),
        );
        for (const answer of answers) expect(answer.statusCode).toBe(200);
        const stored = (await store.openSecrets((await store.get(tenant.workspaceId, CONNECTION))!)).REFRESH_TOKEN;
        const storedIndex = tokens.indexOf(stored);
        expect(storedIndex).toBeGreaterThanOrEqual(0);
        // Every other grant is revoked: a server still holding one would fail.
        for (const token of tokens) if (token !== stored) provider.revokeRefreshToken(token);
        for (const server of SERVERS) expect(await whoami(server)).toBe(puts[storedIndex].user);
      },
    ),
    { numRuns: 4 },
  );
});

test('no secret or token appears in any response or log line', async () => {
  const logged = logs.lines.join('');
  expect(logged).toContain(`/v0/integrations/connections/${CONNECTION}`);
  const secrets = [oauthApp.clientSecret, ...provider.issuedSecrets()];
  expect(secrets.length).toBeGreaterThan(5);
  for (const secret of secrets) {
    expect(logged).not.toContain(secret);
    for (const body of bodies) expect(body).not.toContain(secret);
  }
});
