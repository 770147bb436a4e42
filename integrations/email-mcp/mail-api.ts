import type { OAuthProviderEndpoints } from '../../domain/config';
import { buildMimeMessage, type OutgoingEmail } from '../../domain/integrations/email-message';
import type { RefreshingAccessToken } from '../oauth/refreshing-token';
import { outboundRequest } from '../outbound-http';

const REQUEST_TIMEOUT_MS = 15_000;

export class ProviderApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'ProviderApiError';
  }
}

/**
 * The provider's mail API (Gmail's shape) as the connected user. Every call carries a fresh
 * access token; a 401 means the provider no longer accepts it (revoked, expired early), so the
 * token is refreshed and the call made once more.
 */
export class MailApi {
  constructor(
    private readonly endpoints: Pick<OAuthProviderEndpoints, 'apiBase' | 'userinfoUrl'>,
    private readonly token: RefreshingAccessToken,
  ) {}

  async send(email: OutgoingEmail): Promise<{ id: string; threadId?: string }> {
    const raw = Buffer.from(buildMimeMessage(email), 'utf8').toString('base64url');
    const url = `${this.endpoints.apiBase.replace(/\/+$/, '')}/gmail/v1/users/me/messages/send`;
    return (await this.call(url, { method: 'POST', body: JSON.stringify({ raw }) })) as { id: string; threadId?: string };
  }

  /** The connected account, from the OpenID Connect userinfo endpoint. */
  async whoami(): Promise<{ sub?: string; email?: string; name?: string }> {
    return (await this.call(this.endpoints.userinfoUrl, { method: 'GET' })) as { sub?: string; email?: string; name?: string };
  }

  private async call(url: string, init: { method: string; body?: string }): Promise<unknown> {
    for (let attempt = 1; ; attempt++) {
      const token = await this.token.get();
      const response = await outboundRequest(url, {
        ...init,
        headers: { authorization: `Bearer ${token}`, accept: 'application/json', ...(init.body ? { 'content-type': 'application/json' } : {}) },
        timeoutMs: REQUEST_TIMEOUT_MS,
      });
      if (response.status === 401 && attempt === 1) {
        this.token.invalidate(token);
        continue;
      }
      const { text } = response;
      if (!response.ok) throw new ProviderApiError(`the provider answered ${response.status}: ${providerMessage(text)}`, response.status);
      return text ? JSON.parse(text) : {};
    }
  }
}

/** The human part of a provider's error body (Google: {error: {message}}), kept short. */
function providerMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: string } | string; error_description?: string };
    const message = typeof body.error === 'object' ? body.error.message : (body.error_description ?? body.error);
    if (message) return String(message).slice(0, 300);
  } catch {
    // not JSON
  }
  return text.slice(0, 300) || 'no details';
}
