import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { DURATION_PATTERN, parseDurationSeconds } from '../../../domain/duration';
import { forbidden, notFound } from '../../../domain/errors';
import { commonErrors } from '../common-schemas';
import { requestWorkspace } from '../workspace-context';
import { createApiKey, createServiceAccount, listApiKeys, revokeApiKey } from '../../../store/service-accounts';

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

interface ServiceAccountRow {
  id: string;
  client_id: string;
  name: string;
  account_admin: boolean;
  created_at: Date;
  memberships: { workspace: string; role: 'admin' | 'member' }[];
}

const SELECT_SERVICE_ACCOUNTS = `
  SELECT sa.id, sa.client_id, sa.name, sa.account_admin, sa.created_at,
         COALESCE(json_agg(json_build_object('workspace', w.name, 'role', m.role) ORDER BY w.name)
                  FILTER (WHERE w.id IS NOT NULL), '[]'::json) AS memberships
    FROM service_accounts sa
    LEFT JOIN workspace_members m ON m.principal_id = sa.id
    LEFT JOIN workspaces w ON w.id = m.workspace_id`;

function toServiceAccount(row: ServiceAccountRow) {
  return {
    clientId: row.client_id,
    name: row.name,
    accountAdmin: row.account_admin,
    workspaces: row.memberships,
    createdAt: row.created_at.toISOString(),
  };
}

export default async function serviceAccountRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  async function findServiceAccount(request: FastifyRequest, clientId: string): Promise<ServiceAccountRow | undefined> {
    const { rows } = await app.pg.query<ServiceAccountRow>(
      `${SELECT_SERVICE_ACCOUNTS} WHERE sa.client_id = $1 AND sa.account_id = $2 GROUP BY sa.id`,
      [clientId, request.principal.accountId],
    );
    return rows[0];
  }

  /**
   * A service account is visible to itself, to account admins and to members of a workspace it
   * belongs to; it is managed (keys, deletion) by itself, account admins, and admins of one of its
   * workspaces, except that only account admins manage an account admin: otherwise a workspace
   * admin could mint a key for a more powerful identity.
   */
  async function serviceAccountFor(request: FastifyRequest, clientId: string, manage: boolean): Promise<ServiceAccountRow> {
    const target = await findServiceAccount(request, clientId);
    const me = request.principal;
    const sharesWorkspace = (role?: 'admin') =>
      target?.memberships.some((m) => {
        const mine = me.workspaces.get(m.workspace);
        return mine && (!role || mine.role === role);
      });
    const self = target?.id === me.id;
    if (!target || !(self || me.accountAdmin || sharesWorkspace())) throw notFound(`service account '${clientId}' not found`);
    if (manage && !(self || me.accountAdmin || (sharesWorkspace('admin') && !target.account_admin))) {
      throw forbidden(`managing service account '${clientId}' needs the admin role`);
    }
    return target;
  }

  app.post(
    '/v0/service_accounts',
    {
      schema: {
        tags: ['service accounts'],
        summary: 'Create a service account in the workspace of X-Service-Workspace (workspace admin)',
        body: Type.Object(
          {
            name: FreeName,
            role: Role,
            accountAdmin: Type.Optional(Type.Boolean({ description: 'Account-wide admin; only an account admin may grant it.' })),
          },
          { additionalProperties: false },
        ),
        response: { 200: CreatedServiceAccount, ...commonErrors },
      },
    },
    async (request) => {
      const workspace = requestWorkspace(request, 'admin');
      const accountAdmin = request.body.accountAdmin === true;
      if (accountAdmin && !request.principal.accountAdmin) throw forbidden('only an account admin can create an account admin');
      const created = await createServiceAccount(app.pg, {
        accountId: request.principal.accountId,
        name: request.body.name,
        workspaceId: workspace.id,
        role: request.body.role,
        accountAdmin,
        createdBy: request.principal.clientId,
      });
      return {
        clientId: created.clientId,
        name: request.body.name,
        accountAdmin,
        workspaces: [{ workspace: workspace.name, role: request.body.role }],
        createdAt: created.createdAt.toISOString(),
        role: request.body.role,
        workspace: workspace.name,
        clientSecret: created.clientSecret,
      };
    },
  );

  app.get(
    '/v0/service_accounts',
    {
      schema: {
        tags: ['service accounts'],
        summary: 'Service accounts of the workspace',
        response: { 200: Type.Array(ServiceAccount), ...commonErrors },
      },
    },
    async (request) => {
      const workspace = requestWorkspace(request);
      const { rows } = await app.pg.query<ServiceAccountRow>(
        `${SELECT_SERVICE_ACCOUNTS}
          WHERE sa.id IN (SELECT principal_id FROM workspace_members WHERE workspace_id = $1)
          GROUP BY sa.id ORDER BY sa.created_at, sa.id`,
        [workspace.id],
      );
      return rows.map(toServiceAccount);
    },
  );

  app.get(
    '/v0/service_accounts/:clientId',
    { schema: { tags: ['service accounts'], params: ClientIdParam, response: { 200: ServiceAccount, ...commonErrors } } },
    async (request) => toServiceAccount(await serviceAccountFor(request, request.params.clientId, false)),
  );

  app.delete(
    '/v0/service_accounts/:clientId',
    {
      schema: {
        tags: ['service accounts'],
        summary: 'Delete a service account; its keys and tokens stop working at once',
        params: ClientIdParam,
        response: { 200: ServiceAccount, ...commonErrors },
      },
    },
    async (request) => {
      const target = await serviceAccountFor(request, request.params.clientId, true);
      await app.pg.query('DELETE FROM service_accounts WHERE id = $1', [target.id]);
      return toServiceAccount(target);
    },
  );

  app.post(
    '/v0/service_accounts/:clientId/api_keys',
    {
      schema: {
        tags: ['service accounts'],
        summary: 'Create an API key; the key is returned once',
        params: ClientIdParam,
        body: Type.Object(
          {
            name: FreeName,
            expiresIn: Type.Optional(Type.String({ pattern: DURATION_PATTERN, description: 'Lifetime such as "30d"; none by default.' })),
          },
          { additionalProperties: false },
        ),
        response: { 200: CreatedApiKey, ...commonErrors },
      },
    },
    async (request) => {
      const target = await serviceAccountFor(request, request.params.clientId, true);
      const seconds = request.body.expiresIn ? parseDurationSeconds(request.body.expiresIn) : undefined;
      const expiresAt = seconds === undefined ? null : new Date(Date.now() + seconds * 1000);
      return createApiKey(app.pg, target.id, request.body.name, expiresAt);
    },
  );

  app.get(
    '/v0/service_accounts/:clientId/api_keys',
    {
      schema: { tags: ['service accounts'], params: ClientIdParam, response: { 200: Type.Array(ApiKey), ...commonErrors } },
    },
    async (request) => listApiKeys(app.pg, (await serviceAccountFor(request, request.params.clientId, true)).id),
  );

  app.delete(
    '/v0/service_accounts/:clientId/api_keys/:keyId',
    {
      schema: {
        tags: ['service accounts'],
        summary: 'Revoke an API key',
        params: Type.Object({ clientId: Type.String({ maxLength: 100 }), keyId: Type.String({ maxLength: 100 }) }),
        response: { 200: ApiKey, ...commonErrors },
      },
    },
    async (request) => {
      const target = await serviceAccountFor(request, request.params.clientId, true);
      const revoked = await revokeApiKey(app.pg, target.id, request.params.keyId);
      if (!revoked) throw notFound(`API key '${request.params.keyId}' not found`);
      return revoked;
    },
  );
}
