/**
 * The console's one way to the API: the signed-in credential travels only in memory (this
 * module's `Session`), never in localStorage, sessionStorage or a cookie, so a reload signs out.
 */

export interface Session {
  /** An access token from the token endpoint, for an API key or service-account credentials. */
  credential: string;
  /** When the access token expires (ms since epoch): the session ends then. */
  expiresAt: number;
  accountId: string;
  workspaces: string[];
  workspace: string;
}

/** An answer that was not 2xx, with the API's message (which names the field at fault on a 400). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function failure(response: Response): Promise<ApiError> {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = (await response.json()) as { message?: string; error_description?: string; error?: string };
    message = body.message ?? body.error_description ?? body.error ?? message;
  } catch {
    // not JSON: the status line says enough
  }
  return new ApiError(response.status, message);
}

export interface CallOptions {
  method?: string;
  body?: unknown;
  /** Send X-Service-Workspace (most management routes act on one workspace). */
  workspace?: string;
}

/** A JSON call with a bare credential (the sign-in checks a credential before a session exists). */
export async function callWith(credential: string, path: string, options: CallOptions = {}): Promise<unknown> {
  const headers: Record<string, string> = { authorization: `Bearer ${credential}` };
  if (options.workspace) headers['x-service-workspace'] = options.workspace;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, { method: options.method ?? 'GET', headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  if (!response.ok) throw await failure(response);
  return response.json();
}

export function call<T>(session: Session, path: string, options: CallOptions = {}): Promise<T> {
  return callWith(session.credential, path, { workspace: session.workspace, ...options }) as Promise<T>;
}

/**
 * An API key exchanged at the token endpoint (RFC 8693 token exchange) for a short-lived access
 * token of its service account: the page keeps the token, never the key.
 */
export async function exchangeApiKey(apiKey: string): Promise<{ token: string; expiresAt: number }> {
  const body = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: apiKey, subject_token_type: 'urn:hangar:params:oauth:token-type:api-key' });
  return tokenFrom(await fetch('/v0/oauth/token', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body }));
}

async function tokenFrom(response: Response): Promise<{ token: string; expiresAt: number }> {
  if (!response.ok) throw await failure(response);
  const answer = (await response.json()) as { access_token: string; expires_in: number };
  return { token: answer.access_token, expiresAt: Date.now() + answer.expires_in * 1000 };
}

/** Client credentials of a service account exchanged at the token endpoint for a short-lived access token. */
export async function exchangeClientCredentials(clientId: string, clientSecret: string): Promise<{ token: string; expiresAt: number }> {
  const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret });
  return tokenFrom(await fetch('/v0/oauth/token', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body }));
}

/** Checks a credential against the API and opens a session with what it may see. */
export async function openSession({ token: credential, expiresAt }: { token: string; expiresAt: number }): Promise<Session> {
  const [accounts, workspaceList] = (await Promise.all([callWith(credential, '/v0/accounts'), callWith(credential, '/v0/workspaces')])) as [{ id: string }[], { name: string }[]];
  const workspaces = workspaceList.map((w) => w.name);
  if (!accounts[0]) throw new ApiError(403, 'this credential belongs to no account');
  return { credential, expiresAt, accountId: accounts[0].id, workspaces, workspace: workspaces[0] ?? '' };
}

/** What the platform tells the console about itself (GET /console/config.json). */
export interface ConsoleConfig {
  temporalUiUrl: string | null;
  temporalNamespace: string;
}

export async function consoleConfig(): Promise<ConsoleConfig> {
  const response = await fetch('/console/config.json');
  return response.ok ? ((await response.json()) as ConsoleConfig) : { temporalUiUrl: null, temporalNamespace: 'default' };
}

/** The Temporal Web UI page of a workflow, when the platform knows where its UI is. */
export function workflowLink(config: ConsoleConfig, workflowId: string): string | undefined {
  if (!config.temporalUiUrl) return undefined;
  return `${config.temporalUiUrl}/namespaces/${encodeURIComponent(config.temporalNamespace)}/workflows/${encodeURIComponent(workflowId)}`;
}
