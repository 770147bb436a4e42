import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/**
 * A customer's backend giving each of its end users a dedicated email MCP server on Hangar
 * (auth steps 1-6). Everything Hangar-specific is two calls: POST /v0/integrations/provisionings
 * with the authorization code, then GET it until it is done.
 */
export interface CustomerBackendOptions {
  /** Where this backend is reachable by browsers; the redirect URI is `<publicUrl>/oauth/callback`. */
  publicUrl: string;
  hangar: { baseUrl: string; apiKey: string; workspace: string };
  /** The customer's OAuth application at the provider (one per integration). */
  oauth: { clientId: string; clientSecret: string };
  pollIntervalMs?: number;
  pollTimeoutMs?: number;
}

export interface TenantConfiguration {
  tenant: string;
  connectionName: string;
  functionName: string;
  mcpUrl: string;
}

interface Integration {
  oauth: { authorizationUrl: string; scopes: string[] };
}

const INTEGRATION = 'email';
const STATE_TTL_MS = 10 * 60_000;

export function createCustomerBackend(options: CustomerBackendOptions): { server: Server; tenants: Map<string, TenantConfiguration> } {
  // Exactly the same string in the authorization request and in the code exchange.
  const redirectUri = `${options.publicUrl.replace(/\/+$/, '')}/oauth/callback`;
  const pending = new Map<string, { tenant: string; expires: number }>();
  const tenants = new Map<string, TenantConfiguration>();

  async function hangar(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
    const response = await fetch(`${options.hangar.baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${options.hangar.apiKey}`,
        'x-service-workspace': options.hangar.workspace,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    const answer = (await response.json()) as Record<string, unknown>;
    if (!response.ok) throw new Error(`Hangar answered ${response.status}: ${answer.message ?? answer.error}`);
    return answer;
  }

  // Step 1 -> 2: the end user's UI sends them here; we send them on to the provider.
  async function connect(url: URL, res: ServerResponse) {
    const tenant = url.searchParams.get('user');
    if (!tenant) return page(res, 400, 'the user parameter is required');
    const integration = (await hangar('GET', `/v0/integrations/${INTEGRATION}`)) as unknown as Integration;
    const state = randomBytes(16).toString('base64url');
    pending.set(state, { tenant, expires: Date.now() + STATE_TTL_MS });
    const target = new URL(integration.oauth.authorizationUrl);
    target.searchParams.set('client_id', options.oauth.clientId);
    target.searchParams.set('redirect_uri', redirectUri);
    target.searchParams.set('scope', integration.oauth.scopes.join(' '));
    target.searchParams.set('response_type', 'code');
    // Without offline access there is no refresh token, and the MCP server could not act later.
    target.searchParams.set('access_type', 'offline');
    // Ask again even if the user approved before, so that a refresh token is issued again.
    target.searchParams.set('prompt', 'consent');
    target.searchParams.set('state', state);
    const hint = url.searchParams.get('login_hint');
    if (hint) target.searchParams.set('login_hint', hint);
    res.writeHead(302, { location: target.toString() }).end();
  }

  // Step 3 -> 6: the provider sends the user back with a code; Hangar does steps 4-6.
  async function callback(url: URL, res: ServerResponse) {
    const state = url.searchParams.get('state') ?? '';
    const flow = pending.get(state);
    pending.delete(state);
    if (!flow || flow.expires < Date.now()) return page(res, 400, 'unknown or expired sign-in attempt; start again');
    const error = url.searchParams.get('error');
    const code = url.searchParams.get('code');
    if (error || !code) return page(res, 400, `the provider refused: ${error ?? 'no code'}`);

    let run = await hangar('POST', '/v0/integrations/provisionings', {
      integration: INTEGRATION,
      tenant: flow.tenant,
      code,
      redirectUri,
      clientId: options.oauth.clientId,
      clientSecret: options.oauth.clientSecret,
    });
    const deadline = Date.now() + (options.pollTimeoutMs ?? 60_000);
    while (run.status === 'RUNNING' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, options.pollIntervalMs ?? 500));
      run = await hangar('GET', `/v0/integrations/provisionings/${run.id}`);
    }
    if (run.status !== 'SUCCEEDED') return page(res, 502, `connecting failed: ${run.error ?? 'still running; try again later'}`);
    // Store the configuration, then send the user back with a confirmation.
    tenants.set(flow.tenant, { tenant: flow.tenant, ...(run.result as Omit<TenantConfiguration, 'tenant'>) });
    res.writeHead(302, { location: `/connected?user=${encodeURIComponent(flow.tenant)}` }).end();
  }

  function connected(url: URL, res: ServerResponse) {
    const configuration = tenants.get(url.searchParams.get('user') ?? '');
    if (!configuration) return page(res, 404, 'not connected');
    page(res, 200, `Email connected. Your assistant's MCP server: ${configuration.mcpUrl}`);
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', options.publicUrl);
    const routes: Record<string, () => Promise<void> | void> = {
      '/connect': () => connect(url, res),
      '/oauth/callback': () => callback(url, res),
      '/connected': () => connected(url, res),
    };
    const route = req.method === 'GET' ? routes[url.pathname] : undefined;
    if (!route) return page(res, 404, 'not found');
    Promise.resolve(route()).catch((err: Error) => page(res, 502, `something went wrong: ${err.message}`));
  });
  return { server, tenants };
}

function page(res: ServerResponse, status: number, text: string): void {
  const escaped = text.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><p>${escaped}</p>\n`);
}
