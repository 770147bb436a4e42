import type { IncomingHttpHeaders } from 'node:http';
import type { Pool } from 'pg';
import { looksLikeApiKey } from '../../domain/credentials';
import type { Principal } from '../../domain/principal';
import { unauthorized } from '../../domain/errors';
import { principalForApiKey, principalForToken } from '../../store/principals';
import type { TokenService } from './tokens';

const BEARER = /^Bearer[ ]+([^\s]+)\s*$/i;
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/**
 * Turns the bearer credential of a request into a Principal. Shared by every listener (management
 * API, inference gateway, sandbox gateway) so they all accept exactly the same credentials.
 * X-Service-Authorization wins over Authorization, so a proxy in front that owns Authorization
 * can still be crossed.
 */
export class Authenticator {
  constructor(
    private readonly pg: Pool,
    private readonly tokens: TokenService,
  ) {}

  async authenticate(headers: IncomingHttpHeaders): Promise<Principal> {
    const raw = headers['x-service-authorization'] ?? headers.authorization;
    if (raw === undefined) throw unauthorized('missing credential: send Authorization or X-Service-Authorization: Bearer <token>');
    const value = Array.isArray(raw) ? raw[0] : raw;
    const match = BEARER.exec(value ?? '');
    if (!match) throw unauthorized("malformed credential: expected 'Bearer <token>'");
    const token = match[1];

    if (looksLikeApiKey(token)) {
      const principal = await principalForApiKey(this.pg, token);
      if (!principal) throw unauthorized('invalid, revoked or expired API key');
      return principal;
    }
    if (JWT_SHAPE.test(token)) {
      let claims;
      try {
        claims = await this.tokens.verify(token);
      } catch {
        throw unauthorized('invalid or expired access token');
      }
      const principal = await principalForToken(this.pg, claims.sub, claims.account_id);
      if (!principal) throw unauthorized('the service account of this token no longer exists');
      return principal;
    }
    throw unauthorized('unrecognised credential');
  }
}
