import { requestToken, TokenEndpointError } from './token-client';

export interface RefreshCredentials {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  refreshToken: string;
}

/** Lifetime assumed when a provider does not say (expires_in is only RECOMMENDED by RFC 6749). */
const DEFAULT_LIFETIME_SECONDS = 300;
const MAX_MARGIN_SECONDS = 60;
const REFRESH_ATTEMPTS = 3;
const RETRY_DELAY_MS = 250;

/**
 * An access token kept fresh with the refresh_token grant. It is reused until shortly before
 * expires_in (a tenth of its lifetime, at most a minute, so a call never carries a token that
 * expires in flight), refreshed once for any number of concurrent callers, and dropped when the
 * provider's API rejects it.
 */
export class RefreshingAccessToken {
  private current?: { token: string; refreshAt: number };
  private pending?: Promise<string>;
  private refreshToken: string;

  constructor(
    private readonly credentials: RefreshCredentials,
    private readonly now: () => number = Date.now,
  ) {
    this.refreshToken = credentials.refreshToken;
  }

  async get(): Promise<string> {
    if (this.current && this.now() < this.current.refreshAt) return this.current.token;
    this.pending ??= this.refresh().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  /** The API answered 401 for this token: the next `get` refreshes (unless another call already did). */
  invalidate(token: string): void {
    if (this.current?.token === token) this.current = undefined;
  }

  private async refresh(): Promise<string> {
    const { tokenUrl, clientId, clientSecret } = this.credentials;
    for (let attempt = 1; ; attempt++) {
      try {
        const answer = await requestToken(
          tokenUrl,
          { grant_type: 'refresh_token', refresh_token: this.refreshToken, client_id: clientId, client_secret: clientSecret },
          { secrets: [this.refreshToken, clientSecret] },
        );
        const lifetime = answer.expires_in && answer.expires_in > 0 ? answer.expires_in : DEFAULT_LIFETIME_SECONDS;
        const margin = Math.min(MAX_MARGIN_SECONDS, lifetime / 10);
        this.current = { token: answer.access_token, refreshAt: this.now() + (lifetime - margin) * 1000 };
        // Providers that rotate refresh tokens hand out the next one here.
        if (answer.refresh_token) this.refreshToken = answer.refresh_token;
        return answer.access_token;
      } catch (err) {
        if (err instanceof TokenEndpointError && err.transient && attempt < REFRESH_ATTEMPTS) {
          await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS * attempt));
          continue;
        }
        if (err instanceof TokenEndpointError && err.oauthError === 'invalid_grant') {
          throw new Error('the provider rejected the refresh token (invalid_grant): the user must authorize again and the tenant be provisioned anew', { cause: err });
        }
        throw err;
      }
    }
  }
}
