import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { DURATION_PATTERN } from '../../../domain/duration';
import { commonErrors } from '../common-schemas';
import { requestWorkspace } from '../workspace-context';
import { workspaceServiceAccounts, type ServiceAccountRow } from '../../../store/service-accounts';
import { apiKeysOf, createApiKeyFor, createWorkspaceServiceAccount, removeServiceAccount, revokeApiKeyOf, serviceAccountFor } from './service-account-service';

const tags = ['service accounts'];
const Role = Type.Union([Type.Literal('admin'), Type.Literal('member')]);
const FreeName = Type.String({ minLength: 1, maxLength: 63 });

const Membership = Type.Object({ workspace: Type.String(), role: Role });
const ServiceAccount = Type.Object({
  clientId: Type.String(),
  name: Type.String(),
  accountAdmin: Type.Boolean(),
  workspaces: Type.Array(Membership),
  createdAt: Type.String({ format: 'date-time' }),
});
const CreatedServiceAccount = Type.Object({
  ...ServiceAccount.properties,
  role: Role,
  workspace: Type.String(),
  clientSecret: Type.String({ description: 'Shown once. Use it with the client id at /v0/oauth/token.' }),
});
const ApiKey = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String({ description: 'The first characters of the key, to tell keys apart.' }),
  createdAt: Type.String({ format: 'date-time' }),
  expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  revokedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});
const CreatedApiKey = Type.Object({ ...ApiKey.properties, apiKey: Type.String({ description: 'Shown once.' }) });

const ClientIdParam = Type.Object({ clientId: Type.String({ maxLength: 100 }) });

const createSchema = {
  tags,
  summary: 'Create a service account in the workspace of X-Service-Workspace (workspace admin)',
  body: Type.Object(
    { name: FreeName, role: Role, accountAdmin: Type.Optional(Type.Boolean({ description: 'Account-wide admin; only an account admin may grant it.' })) },
    { additionalProperties: false },
  ),
  response: { 200: CreatedServiceAccount, ...commonErrors },
};
const deleteSchema = { tags, summary: 'Delete a service account; its keys and tokens stop working at once', params: ClientIdParam, response: { 200: ServiceAccount, ...commonErrors } };
const createKeySchema = {
  tags,
  summary: 'Create an API key; the key is returned once',
  params: ClientIdParam,
  body: Type.Object(
    { name: FreeName, expiresIn: Type.Optional(Type.String({ pattern: DURATION_PATTERN, description: 'Lifetime such as "30d"; none by default.' })) },
    { additionalProperties: false },
  ),
  response: { 200: CreatedApiKey, ...commonErrors },
};
const revokeKeySchema = {
  tags,
  summary: 'Revoke an API key',
  params: Type.Object({ clientId: Type.String({ maxLength: 100 }), keyId: Type.String({ maxLength: 100 }) }),
  response: { 200: ApiKey, ...commonErrors },
};

function toServiceAccount(row: ServiceAccountRow) {
  return { clientId: row.client_id, name: row.name, accountAdmin: row.account_admin, workspaces: row.memberships, createdAt: row.created_at.toISOString() };
}

/** /v0/service_accounts: the identities of an account and their API keys (service-account-service.ts says who may do what). */
export default async function serviceAccountRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const pg = app.pg;

  app.post('/v0/service_accounts', { schema: createSchema }, async (request) => {
    const created = await createWorkspaceServiceAccount(pg, request.principal, requestWorkspace(request, 'admin'), request.body);
    return {
      clientId: created.clientId,
      name: created.name,
      accountAdmin: created.accountAdmin,
      workspaces: [{ workspace: created.workspace, role: created.role }],
      createdAt: created.createdAt.toISOString(),
      role: created.role,
      workspace: created.workspace,
      clientSecret: created.clientSecret,
    };
  });
  app.get(
    '/v0/service_accounts',
    { schema: { tags, summary: 'Service accounts of the workspace', response: { 200: Type.Array(ServiceAccount), ...commonErrors } } },
    async (request) => (await workspaceServiceAccounts(pg, requestWorkspace(request).id)).map(toServiceAccount),
  );
  app.get(
    '/v0/service_accounts/:clientId',
    { schema: { tags, params: ClientIdParam, response: { 200: ServiceAccount, ...commonErrors } } },
    async (request) => toServiceAccount(await serviceAccountFor(pg, request.principal, request.params.clientId, false)),
  );
  app.delete('/v0/service_accounts/:clientId', { schema: deleteSchema }, async (request) =>
    toServiceAccount(await removeServiceAccount(pg, request.principal, request.params.clientId)),
  );
  app.post('/v0/service_accounts/:clientId/api_keys', { schema: createKeySchema }, async (request) =>
    createApiKeyFor(pg, request.principal, request.params.clientId, request.body),
  );
  app.get(
    '/v0/service_accounts/:clientId/api_keys',
    { schema: { tags, params: ClientIdParam, response: { 200: Type.Array(ApiKey), ...commonErrors } } },
    async (request) => apiKeysOf(pg, request.principal, request.params.clientId),
  );
  app.delete('/v0/service_accounts/:clientId/api_keys/:keyId', { schema: revokeKeySchema }, async (request) =>
    revokeApiKeyOf(pg, request.principal, request.params.clientId, request.params.keyId),
  );
}
