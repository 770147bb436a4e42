import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { secretMatches } from '../../../domain/credentials';
import { apiKeyGrant } from '../../../store/principals';
import { clientCredentials } from '../../../store/service-accounts';
import { ErrorBody } from '../common-schemas';

const TokenRequest = Type.Object(
  {
    grant_type: Type.Optional(Type.String({ maxLength: 100 })),
    client_id: Type.Optional(Type.String({ maxLength: 200 })),
    client_secret: Type.Optional(Type.String({ maxLength: 500 })),
    scope: Type.Optional(Type.String({ maxLength: 1000 })),
    subject_token: Type.Optional(Type.String({ maxLength: 500 })),
    subject_token_type: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: true },
);
const TokenResponse = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  issued_token_type: Type.Optional(Type.String()),
});

/** OAuth errors carry RFC 6749's `error_description` and our usual `message`, with the same text. */
function oauthError(reply: FastifyReply, status: number, error: string, description: string) {
  return reply.status(status).send({ error, error_description: description, message: description });
}

function basicCredentials(header: string | undefined): { clientId: string; clientSecret: string } | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  // RFC 6749 section 2.3.1: both parts are form-urlencoded before being joined.
  try {
    return {
      clientId: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')),
      clientSecret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')),
    };
  } catch {
    return undefined;
  }
}

interface TokenRequestBody {
  grant_type?: string;
  client_id?: string;
  client_secret?: string;
  subject_token?: string;
  subject_token_type?: string;
}

/** RFC 8693 token exchange: an API key (the subject token) for a short-lived access token of its service account. */
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const API_KEY_TOKEN_TYPE = 'urn:hangar:params:oauth:token-type:api-key';

/**
 * Lets a client that holds an API key (the console's sign-in) keep a short-lived token in memory
 * instead of the key. The token names the key's service account, as one from its client
 * credentials would, and expires no later than the key.
 */
async function exchangeApiKey(app: FastifyInstance, reply: FastifyReply, body: TokenRequestBody) {
  if (!body.subject_token) return oauthError(reply, 400, 'invalid_request', 'subject_token is required (the API key)');
  if (body.subject_token_type !== API_KEY_TOKEN_TYPE) {
    return oauthError(reply, 400, 'invalid_request', `subject_token_type must be ${API_KEY_TOKEN_TYPE}`);
  }
  const grant = await apiKeyGrant(app.pg, body.subject_token);
  if (!grant) return oauthError(reply, 400, 'invalid_grant', 'invalid, revoked or expired API key');
  const { token, expiresIn } = await app.tokens.issue({ sub: grant.serviceAccountId, clientId: grant.clientId, accountId: grant.accountId }, grant.secondsLeft === null ? undefined : Math.max(1, grant.secondsLeft));
  return { access_token: token, token_type: 'Bearer' as const, expires_in: expiresIn, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token' };
}

export default async function oauthRoutes(app: FastifyInstance) {
  app.post(
    '/v0/oauth/token',
    {
      config: { public: true },
      schema: {
        tags: ['auth'],
        summary: 'Exchange client credentials for a short-lived access token (JWT)',
        description:
          'grant_type=client_credentials with HTTP Basic auth or client_id and client_secret in the form; or grant_type=urn:ietf:params:oauth:grant-type:token-exchange with an API key as subject_token (subject_token_type=urn:hangar:params:oauth:token-type:api-key).',
        security: [],
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: TokenRequest,
        response: { 200: TokenResponse, 400: ErrorBody, 401: ErrorBody },
      },
    },
    async (request, reply) => {
      const body = (request.body ?? {}) as TokenRequestBody;
      reply.header('Cache-Control', 'no-store').header('Pragma', 'no-cache');
      if (!body.grant_type) return oauthError(reply, 400, 'invalid_request', 'grant_type is required');
      if (body.grant_type === TOKEN_EXCHANGE) return exchangeApiKey(app, reply, body);
      if (body.grant_type !== 'client_credentials') {
        return oauthError(reply, 400, 'unsupported_grant_type', `grant_type '${body.grant_type}' is not supported; use client_credentials or ${TOKEN_EXCHANGE}`);
      }
      const basic = basicCredentials(request.headers.authorization);
      const clientId = basic?.clientId ?? body.client_id;
      const clientSecret = basic?.clientSecret ?? body.client_secret;
      if (!clientId || !clientSecret) {
        return oauthError(reply, 400, 'invalid_request', 'client_id and client_secret are required (HTTP Basic or form fields)');
      }
      const account = await clientCredentials(app.pg, clientId);
      if (!account || !secretMatches(clientSecret, account.secret_hash)) {
        if (basic) reply.header('WWW-Authenticate', 'Basic realm="hangar"');
        return oauthError(reply, 401, 'invalid_client', 'unknown client or wrong secret');
      }
      const { token, expiresIn } = await app.tokens.issue({ sub: account.id, clientId, accountId: account.account_id });
      return { access_token: token, token_type: 'Bearer' as const, expires_in: expiresIn };
    },
  );

  app.get(
    '/.well-known/jwks.json',
    { config: { public: true, unversioned: true }, schema: { tags: ['auth'], summary: 'Public keys that sign access tokens', security: [] } },
    async (_request, reply) => {
      reply.header('Cache-Control', 'public, max-age=300');
      return app.tokens.jwks();
    },
  );

  app.get(
    '/.well-known/openid-configuration',
    { config: { public: true, unversioned: true }, schema: { tags: ['auth'], summary: 'OpenID Connect discovery', security: [] } },
    async () => {
      const base = app.config.baseUrl;
      return {
        issuer: base,
        token_endpoint: `${base}/v0/oauth/token`,
        jwks_uri: `${base}/.well-known/jwks.json`,
        grant_types_supported: ['client_credentials', TOKEN_EXCHANGE],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
        response_types_supported: ['token'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['ES256'],
        token_endpoint_auth_signing_alg_values_supported: ['ES256'],
      };
    },
  );
}
