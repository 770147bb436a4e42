import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuthProviderEndpoints } from '../../domain/config';

/** One OAuth application registered at the fake provider. */
export interface FakeClient {
  clientId: string;
  clientSecret: string;
  /** Redirect URIs registered for the application; matched exactly, as Google does. */
  redirectUris: string[];
}

/** A message the fake mail API accepted, decoded from its RFC 5322 form. */
export interface ReceivedMessage {
  id: string;
  /** The account it was sent as (the owner of the access token). */
  from: string;
  to: string;
  cc?: string;
  bcc?: string;
  subject: string;
  text: string;
}

export interface TokenRequestRecord {
  contentType: string | undefined;
  grantType: string | undefined;
  status: number;
}

interface IssuedCode {
  clientId: string;
  redirectUri: string;
  scopes: string[];
  offline: boolean;
  user: string;
  used: boolean;
}

interface IssuedToken {
  clientId: string;
  user: string;
  scopes: string[];
  expiresAt: number;
  /** The refresh token this access token was obtained with, if any: revoking it ends this one too. */
  refreshToken?: string;
}

const secretToken = (prefix: string) => `${prefix}-${randomBytes(18).toString('base64url')}`;

/**
 * A small OAuth 2.0 provider with a Gmail-shaped mail API, as a real HTTP server for tests:
 * - GET /o/oauth2/auth: consents at once as the user named by login_hint and redirects with a
 *   code; an unregistered redirect_uri gets a 400 page and no redirect.
 * - POST /token: authorization_code and refresh_token grants (form-encoded only); a refresh
 *   token is issued only when the authorization asked for access_type=offline.
 * - POST /gmail/v1/users/me/messages/send: records the message; an expired or unknown access
 *   token gets 401. GET /v1/userinfo: who the token belongs to.
 * Knobs make the token endpoint fail, expire every access token, or shorten their lifetime.
 */
export class FakeOAuthProvider {
  readonly received: ReceivedMessage[] = [];
  readonly tokenRequests: TokenRequestRecord[] = [];
  accessTokenLifetimeSeconds = 3600;
  private failures: { remaining: number; status: number } = { remaining: 0, status: 503 };
  private readonly codes = new Map<string, IssuedCode>();
  private readonly accessTokens = new Map<string, IssuedToken>();
  private readonly refreshTokens = new Map<string, Omit<IssuedToken, 'expiresAt'>>();
  /** Revoked refresh tokens, still listed among the secrets handed out. */
  private readonly revoked = new Set<string>();
  private server!: Server;
  url = '';

  private constructor(private readonly clients: FakeClient[]) {}

  static async start(clients: FakeClient[], port = 0): Promise<FakeOAuthProvider> {
    const provider = new FakeOAuthProvider(clients);
    provider.server = createServer((req, res) => {
      provider.route(req, res).catch((err) => send(res, 500, { error: 'server_error', error_description: (err as Error).message }));
    });
    await new Promise<void>((resolve) => provider.server.listen(port, '127.0.0.1', resolve));
    provider.url = `http://127.0.0.1:${(provider.server.address() as AddressInfo).port}`;
    return provider;
  }

  get endpoints(): OAuthProviderEndpoints {
    return { authorizationUrl: `${this.url}/o/oauth2/auth`, tokenUrl: `${this.url}/token`, apiBase: this.url, userinfoUrl: `${this.url}/v1/userinfo` };
  }

  /** The next `count` token requests answer `status` (a provider outage). */
  failTokenRequests(count: number, status = 503): void {
    this.failures = { remaining: count, status };
  }

  /** Every access token issued so far stops working, as after a revocation. */
  expireAccessTokens(): void {
    for (const token of this.accessTokens.values()) token.expiresAt = 0;
  }

  /** The user revokes the grant (as at Google's account page): the refresh token and its access tokens stop working. */
  revokeRefreshToken(refreshToken: string): void {
    this.refreshTokens.delete(refreshToken);
    this.revoked.add(refreshToken);
    for (const token of this.accessTokens.values()) if (token.refreshToken === refreshToken) token.expiresAt = 0;
  }

  grantCount(grantType: string): number {
    return this.tokenRequests.filter((request) => request.grantType === grantType && request.status === 200).length;
  }

  /** Every code and token handed out so far: none may show in Hangar's responses, logs or history. */
  issuedSecrets(): string[] {
    return [...this.codes.keys(), ...this.accessTokens.keys(), ...this.refreshTokens.keys(), ...this.revoked];
  }

  latestRefreshToken(): string | undefined {
    return [...this.refreshTokens.keys()].at(-1);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    if (req.method === 'GET' && url.pathname === '/o/oauth2/auth') return this.authorize(url.searchParams, res);
    if (req.method === 'POST' && url.pathname === '/token') return this.token(req, await readBody(req), res);
    if (req.method === 'POST' && url.pathname === '/gmail/v1/users/me/messages/send') return this.sendMessage(req, await readBody(req), res);
    if (req.method === 'GET' && url.pathname === '/v1/userinfo') return this.userinfo(req, res);
    send(res, 404, { error: 'not_found' });
  }

  private authorize(query: URLSearchParams, res: ServerResponse): void {
    const client = this.clients.find((c) => c.clientId === query.get('client_id'));
    if (!client) return page(res, 401, 'Error 401: invalid_client');
    const redirectUri = query.get('redirect_uri') ?? '';
    // Exact string comparison: a trailing slash or another port is a different URI.
    if (!client.redirectUris.includes(redirectUri)) return page(res, 400, 'Error 400: redirect_uri_mismatch');
    const target = new URL(redirectUri);
    const state = query.get('state');
    if (state !== null) target.searchParams.set('state', state);
    if (query.get('response_type') !== 'code') {
      target.searchParams.set('error', 'unsupported_response_type');
    } else if (!query.get('scope')) {
      target.searchParams.set('error', 'invalid_scope');
    } else {
      const code = secretToken('code');
      this.codes.set(code, {
        clientId: client.clientId,
        redirectUri,
        scopes: (query.get('scope') ?? '').split(' ').filter(Boolean),
        offline: query.get('access_type') === 'offline',
        user: query.get('login_hint') || 'user@example.com',
        used: false,
      });
      target.searchParams.set('code', code);
    }
    res.writeHead(302, { location: target.toString() }).end();
  }

  private token(req: IncomingMessage, body: string, res: ServerResponse): void {
    const contentType = req.headers['content-type']?.split(';')[0].trim();
    const params = new URLSearchParams(contentType === 'application/x-www-form-urlencoded' ? body : '');
    const answer = (status: number, payload: Record<string, unknown>) => {
      this.tokenRequests.push({ contentType, grantType: params.get('grant_type') ?? undefined, status });
      send(res, status, payload);
    };
    if (this.failures.remaining > 0) {
      this.failures.remaining--;
      return answer(this.failures.status, { error: 'temporarily_unavailable' });
    }
    if (contentType !== 'application/x-www-form-urlencoded') return answer(400, { error: 'invalid_request', error_description: 'form-encoded body required' });
    const client = this.clients.find((c) => c.clientId === params.get('client_id') && c.clientSecret === params.get('client_secret'));
    if (!client) return answer(401, { error: 'invalid_client', error_description: 'Unauthorized' });

    if (params.get('grant_type') === 'authorization_code') {
      const code = this.codes.get(params.get('code') ?? '');
      if (!code || code.used || code.clientId !== client.clientId) return answer(400, { error: 'invalid_grant', error_description: 'Bad Request' });
      if (code.redirectUri !== params.get('redirect_uri')) return answer(400, { error: 'redirect_uri_mismatch', error_description: 'Bad Request' });
      code.used = true;
      const grant = { clientId: client.clientId, user: code.user, scopes: code.scopes };
      const refreshToken = code.offline ? secretToken('refresh') : undefined;
      if (refreshToken) this.refreshTokens.set(refreshToken, grant);
      return answer(200, { ...this.issueAccessToken({ ...grant, refreshToken }), ...(refreshToken ? { refresh_token: refreshToken } : {}) });
    }
    if (params.get('grant_type') === 'refresh_token') {
      const refreshToken = params.get('refresh_token') ?? '';
      const grant = this.refreshTokens.get(refreshToken);
      if (!grant || grant.clientId !== client.clientId) return answer(400, { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' });
      return answer(200, this.issueAccessToken({ ...grant, refreshToken }));
    }
    answer(400, { error: 'unsupported_grant_type' });
  }

  private issueAccessToken(grant: Omit<IssuedToken, 'expiresAt'>) {
    const token = secretToken('access');
    this.accessTokens.set(token, { ...grant, expiresAt: Date.now() + this.accessTokenLifetimeSeconds * 1000 });
    return { access_token: token, token_type: 'Bearer', expires_in: this.accessTokenLifetimeSeconds, scope: grant.scopes.join(' ') };
  }

  private bearer(req: IncomingMessage, res: ServerResponse): IssuedToken | undefined {
    const token = this.accessTokens.get(req.headers.authorization?.replace(/^Bearer /, '') ?? '');
    if (token && token.expiresAt > Date.now()) return token;
    send(res, 401, { error: { code: 401, message: 'Request had invalid authentication credentials.', status: 'UNAUTHENTICATED' } });
    return undefined;
  }

  private sendMessage(req: IncomingMessage, body: string, res: ServerResponse): void {
    const token = this.bearer(req, res);
    if (!token) return;
    if (!token.scopes.includes('https://www.googleapis.com/auth/gmail.send')) {
      return send(res, 403, { error: { code: 403, message: 'Request had insufficient authentication scopes.' } });
    }
    const raw = (JSON.parse(body || '{}') as { raw?: string }).raw;
    if (!raw) return send(res, 400, { error: { code: 400, message: "'raw' RFC822 payload message string required" } });
    const id = randomBytes(8).toString('hex');
    this.received.push({ id, from: token.user, ...parseMessage(Buffer.from(raw, 'base64url').toString('utf8')) });
    send(res, 200, { id, threadId: id, labelIds: ['SENT'] });
  }

  private userinfo(req: IncomingMessage, res: ServerResponse): void {
    const token = this.bearer(req, res);
    if (!token) return;
    const sub = createHash('sha256').update(token.user).digest('hex').slice(0, 21);
    send(res, 200, { sub, email: token.user, email_verified: true, name: token.user.split('@')[0] });
  }
}

/** Headers and text of a single-part message (the form the email MCP server sends). */
function parseMessage(message: string): Omit<ReceivedMessage, 'id' | 'from'> {
  const split = message.indexOf('\r\n\r\n');
  const headers = new Map<string, string>();
  for (const line of message.slice(0, split).split('\r\n')) {
    const colon = line.indexOf(':');
    headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
  }
  const rawBody = message.slice(split + 4);
  const text = headers.get('content-transfer-encoding') === 'base64' ? Buffer.from(rawBody.replace(/\s+/g, ''), 'base64').toString('utf8') : rawBody;
  const subject = (headers.get('subject') ?? '').replace(/=\?UTF-8\?B\?([^?]*)\?=/gi, (_m, b64: string) => Buffer.from(b64, 'base64').toString('utf8'));
  return { to: headers.get('to') ?? '', cc: headers.get('cc'), bcc: headers.get('bcc'), subject, text };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function page(res: ServerResponse, status: number, title: string): void {
  res.writeHead(status, { 'content-type': 'text/html' }).end(`<html><body><h1>${title}</h1></body></html>`);
}
