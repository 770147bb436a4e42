import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createEmailMcpServer } from '../../../integrations/email-mcp/server';
import { requestToken } from '../../../integrations/oauth/token-client';
import { FakeOAuthProvider, type FakeClient } from '../../fakes/oauth-provider';
import { authorizationCode } from '../../fakes/oauth-consent';

const app: FakeClient = { clientId: 'mail-app.apps.example', clientSecret: 'mail-app-client-secret-0123456789', redirectUris: ['http://127.0.0.1:9/callback'] };
let provider: FakeOAuthProvider;

beforeAll(async () => {
  provider = await FakeOAuthProvider.start([app]);
});
afterAll(() => provider.close());

/** Steps 2-4 of the tenant flow against the fake provider: a refresh token for `user`. */
async function refreshTokenFor(user: string): Promise<string> {
  const code = await authorizationCode({ authorizationUrl: provider.endpoints.authorizationUrl, clientId: app.clientId, redirectUri: app.redirectUris[0], loginHint: user });
  const tokens = await requestToken(
    provider.endpoints.tokenUrl,
    { grant_type: 'authorization_code', code, client_id: app.clientId, client_secret: app.clientSecret, redirect_uri: app.redirectUris[0] },
    { secrets: [] },
  );
  if (!tokens.refresh_token) throw new Error('no refresh token');
  return tokens.refresh_token;
}

interface Running {
  client: Client;
  close(): Promise<void>;
}

async function startServer(refreshToken: string, now?: () => number): Promise<Running> {
  const server: Server = createEmailMcpServer({
    secrets: { CLIENT_ID: app.clientId, CLIENT_SECRET: app.clientSecret, REFRESH_TOKEN: refreshToken },
    provider: provider.endpoints,
    now,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = new Client({ name: 'email-mcp-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`)));
  return {
    client,
    close: async () => {
      await client.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const textOf = (result: Awaited<ReturnType<Client['callTool']>>) => (result.content as { type: string; text: string }[]).map((part) => part.text).join('\n');

test('send_email and whoami act as the connected user, with one token refresh for many calls', async () => {
  const running = await startServer(await refreshTokenFor('ada@example.com'));
  try {
    const tools = (await running.client.listTools()).tools.map((tool) => tool.name).sort();
    expect(tools).toEqual(['send_email', 'whoami']);
    const refreshesBefore = provider.grantCount('refresh_token');

    const me = await running.client.callTool({ name: 'whoami', arguments: {} });
    expect(JSON.parse(textOf(me))).toEqual(expect.objectContaining({ email: 'ada@example.com' }));

    const sent = await running.client.callTool({
      name: 'send_email',
      arguments: { to: 'bob@example.org', cc: ['carol@example.org'], subject: 'Grüße from Hangar', body: 'Line one\nLine two, ünïcödé' },
    });
    expect(sent.isError).toBeFalsy();
    const message = provider.received.at(-1)!;
    expect(textOf(sent)).toContain(message.id);
    expect(message).toEqual(expect.objectContaining({ from: 'ada@example.com', to: 'bob@example.org', cc: 'carol@example.org', subject: 'Grüße from Hangar', text: 'Line one\nLine two, ünïcödé' }));

    await running.client.callTool({ name: 'send_email', arguments: { to: 'bob@example.org', subject: 'again', body: 'x' } });
    expect(provider.grantCount('refresh_token') - refreshesBefore).toBe(1);
  } finally {
    await running.close();
  }
});

test('a 401 from the provider API makes the server refresh the token and send anyway', async () => {
  const running = await startServer(await refreshTokenFor('grace@example.com'));
  try {
    await running.client.callTool({ name: 'whoami', arguments: {} });
    const refreshesBefore = provider.grantCount('refresh_token');
    provider.expireAccessTokens();
    const sent = await running.client.callTool({ name: 'send_email', arguments: { to: 'x@example.org', subject: 'after revocation', body: 'still works' } });
    expect(sent.isError).toBeFalsy();
    expect(provider.received.at(-1)).toEqual(expect.objectContaining({ from: 'grace@example.com', subject: 'after revocation' }));
    expect(provider.grantCount('refresh_token') - refreshesBefore).toBe(1);
  } finally {
    await running.close();
  }
});

test('the cached token is refreshed shortly before expires_in, not after', async () => {
  let clock = Date.now();
  provider.accessTokenLifetimeSeconds = 100;
  const running = await startServer(await refreshTokenFor('linus@example.com'), () => clock);
  try {
    await running.client.callTool({ name: 'whoami', arguments: {} });
    const afterFirst = provider.grantCount('refresh_token');
    clock += 85_000; // 15 s before expiry: still outside the 10 s margin
    await running.client.callTool({ name: 'whoami', arguments: {} });
    expect(provider.grantCount('refresh_token')).toBe(afterFirst);
    clock += 6_000; // 9 s before expiry: inside the margin
    await running.client.callTool({ name: 'whoami', arguments: {} });
    expect(provider.grantCount('refresh_token')).toBe(afterFirst + 1);
  } finally {
    provider.accessTokenLifetimeSeconds = 3600;
    await running.close();
  }
});

test('a token endpoint outage is ridden out; a revoked refresh token gives a tool error without secrets', async () => {
  const refreshToken = await refreshTokenFor('ken@example.com');
  const running = await startServer(refreshToken);
  try {
    provider.failTokenRequests(2, 503);
    const me = await running.client.callTool({ name: 'whoami', arguments: {} });
    expect(me.isError).toBeFalsy();
  } finally {
    await running.close();
  }

  const revoked = await startServer('refresh-not-issued-by-the-provider');
  try {
    const result = await revoked.client.callTool({ name: 'send_email', arguments: { to: 'x@example.org', subject: 's', body: 'b' } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/invalid_grant.*authorize again/);
    expect(textOf(result)).not.toContain('refresh-not-issued-by-the-provider');
    expect(textOf(result)).not.toContain(app.clientSecret);
  } finally {
    await revoked.close();
  }
});

test('send_email refuses bad addresses and header injection without calling the provider', async () => {
  const running = await startServer(await refreshTokenFor('mallory@example.com'));
  try {
    const before = provider.received.length;
    const badAddress = await running.client.callTool({ name: 'send_email', arguments: { to: 'not-an-address', subject: 's', body: 'b' } });
    expect(badAddress.isError).toBe(true);
    expect(textOf(badAddress)).toContain("to: 'not-an-address'");
    const injected = await running.client.callTool({ name: 'send_email', arguments: { to: 'a@example.org', subject: 'hi\r\nBcc: everyone@example.org', body: 'b' } });
    expect(injected.isError).toBe(true);
    expect(textOf(injected)).toContain('subject must be one line');
    expect(provider.received.length).toBe(before);
  } finally {
    await running.close();
  }
});

test('a terminated session is forgotten; requests outside a session are refused', async () => {
  const server = createEmailMcpServer({
    secrets: { CLIENT_ID: app.clientId, CLIENT_SECRET: app.clientSecret, REFRESH_TOKEN: 'unused' },
    provider: provider.endpoints,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  try {
    const transport = new StreamableHTTPClientTransport(new URL(url));
    const client = new Client({ name: 'session-test', version: '1.0.0' });
    await client.connect(transport);
    const sessionId = transport.sessionId!;
    expect(sessionId).toBeTruthy();
    await transport.terminateSession();
    await client.close();
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const stale = await fetch(url, { method: 'POST', headers: { ...headers, 'mcp-session-id': sessionId }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
    expect(stale.status).toBe(404);
    const sessionless = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
    expect(sessionless.status).toBe(400);
    expect((await fetch(url.replace('/mcp', '/health'))).status).toBe(200);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
