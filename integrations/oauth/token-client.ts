import { redactSecrets } from '../../domain/integrations/secrets';
import { OutboundNetworkError, OutboundTimeoutError, outboundRequest, type OutboundResponse } from '../outbound-http';

/** A token endpoint's success answer (RFC 6749 section 5.1). */
export interface TokenResponse {
  access_token: string;
  token_type?: string;
  expires_in?: number;
  refresh_token?: string;
  scope?: string;
}

/**
 * A failed token request. `transient` says whether asking again may succeed: network failures,
 * timeouts, 5xx, 408 and 429 are; other 4xx (a used code, a wrong secret) are not.
 */
export class TokenEndpointError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly oauthError: string | undefined,
    readonly transient: boolean,
  ) {
    super(message);
    this.name = 'TokenEndpointError';
  }
}

const DEFAULT_TIMEOUT_MS = 10_000;

function isTransientStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

/**
 * POSTs a grant to a token endpoint as application/x-www-form-urlencoded and returns the parsed
 * answer. Error messages never carry the secrets sent: they are redacted from whatever the
 * provider echoes back.
 */
export async function requestToken(
  tokenUrl: string,
  params: Record<string, string>,
  options: { secrets: readonly string[]; timeoutMs?: number },
): Promise<TokenResponse> {
  const redact = (text: string) => redactSecrets(text, options.secrets);
  let response: OutboundResponse;
  try {
    response = await outboundRequest(tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams(params).toString(),
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    });
  } catch (err) {
    // A network failure's message names the URL (without its query) and what failed.
    const message =
      err instanceof OutboundTimeoutError
        ? `the token request to ${tokenUrl} timed out`
        : err instanceof OutboundNetworkError
          ? `the token request failed: ${redact(err.message)}`
          : `the token request to ${tokenUrl} failed: ${redact((err as Error).message)}`;
    throw new TokenEndpointError(message, undefined, undefined, true);
  }
  const { text } = response;
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // Not JSON (an HTML error page, a proxy's answer): judged by the status alone.
  }
  if (!response.ok) {
    const oauthError = typeof body.error === 'string' ? body.error : undefined;
    const description = typeof body.error_description === 'string' ? `: ${body.error_description}` : '';
    throw new TokenEndpointError(
      redact(`the token endpoint answered ${response.status}${oauthError ? ` ${oauthError}` : ''}${description}`),
      response.status,
      oauthError,
      isTransientStatus(response.status),
    );
  }
  if (typeof body.access_token !== 'string') {
    throw new TokenEndpointError(`the token endpoint answered ${response.status} without an access_token`, response.status, undefined, true);
  }
  return body as unknown as TokenResponse;
}
