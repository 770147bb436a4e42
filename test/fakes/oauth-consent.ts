import { EMAIL_SEND_SCOPE } from '../../domain/integrations/catalog';

export interface ConsentRequest {
  authorizationUrl: string;
  clientId: string;
  redirectUri: string;
  scopes?: string[];
  /** 'offline' unless told otherwise, as the tenant flow requires. */
  accessType?: 'offline' | 'online' | null;
  loginHint?: string;
  state?: string;
}

/**
 * What the end user's browser does in steps 2-3 of the tenant flow: open the authorization URL,
 * approve, and follow the redirect back. Returns the redirect's query (code, state or error), or
 * the provider's status when it refuses to redirect at all.
 */
export async function consent(request: ConsentRequest): Promise<{ status: number; params: URLSearchParams; location?: string }> {
  const url = new URL(request.authorizationUrl);
  url.searchParams.set('client_id', request.clientId);
  url.searchParams.set('redirect_uri', request.redirectUri);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('scope', (request.scopes ?? [EMAIL_SEND_SCOPE, 'openid', 'profile', 'email']).join(' '));
  const accessType = request.accessType === undefined ? 'offline' : request.accessType;
  if (accessType) url.searchParams.set('access_type', accessType);
  if (request.loginHint) url.searchParams.set('login_hint', request.loginHint);
  if (request.state) url.searchParams.set('state', request.state);
  const response = await fetch(url, { redirect: 'manual' });
  await response.arrayBuffer();
  const location = response.headers.get('location') ?? undefined;
  return { status: response.status, params: location ? new URL(location).searchParams : new URLSearchParams(), location };
}

/** Consent that must succeed; returns the authorization code. */
export async function authorizationCode(request: ConsentRequest): Promise<string> {
  const answer = await consent(request);
  const code = answer.params.get('code');
  if (answer.status !== 302 || !code) throw new Error(`consent failed: ${answer.status} ${answer.params.get('error') ?? ''}`);
  return code;
}
