import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { findIntegration, INTEGRATIONS, type IntegrationDefinition } from '../../../domain/integrations/catalog';
import { mergeSecretUpdate, sameSecrets, secretsProblem } from '../../../domain/integrations/secrets';
import { ApiError, badRequest, conflict, notFound } from '../../../domain/errors';
import { assertNameUnchanged } from '../resources/named';
import { NameParam, commonErrors } from '../common-schemas';
import { requestWorkspace } from '../workspace-context';
import { awaitConnectionRollout, startConnectionRollout } from '../../../control-plane/connection-rollout';
import { ConnectionStore, type ConnectionRow } from '../../../store/connections';
import { Connection, ConnectionCreate, ConnectionUpdate, Integration } from './schemas';

const tags = ['integrations'];
/** How long a PUT that changed the secrets waits for the bound functions to serve with them. */
const ROLLOUT_WAIT_MS = 60_000;

/**
 * The integration catalog and integration connections (endpoint 12). Connection secrets are
 * sealed at rest and leave only masked: the response schemas serialise nothing else.
 */
export default async function integrationRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const store = new ConnectionStore(app.pg, app.secrets);

  const describe = (integration: IntegrationDefinition) => ({
    name: integration.name,
    displayName: integration.displayName,
    description: integration.description,
    secrets: integration.secrets.map((secret) => ({ ...secret })),
    ...(integration.oauth ? { oauth: { authorizationUrl: integration.oauth.endpoints(app.config).authorizationUrl, scopes: [...integration.oauth.scopes] } } : {}),
    ...(integration.mcp ? { mcp: { tools: [...integration.mcp.tools] } } : {}),
  });
  const envelope = (row: ConnectionRow) => ({
    metadata: {
      name: row.name,
      displayName: row.display_name,
      labels: row.labels,
      workspace: row.workspace,
      ...(row.tenant ? { tenant: row.tenant } : {}),
      createdAt: row.created_at.toISOString(),
      updatedAt: row.updated_at.toISOString(),
      createdBy: row.created_by,
      updatedBy: row.updated_by,
    },
    spec: { integration: row.integration, secret: row.secret_preview },
  });
  const integrationNamed = (name: string) => {
    const integration = findIntegration(name);
    if (!integration) throw badRequest(`spec.integration: unknown integration '${name}' (known: ${INTEGRATIONS.map((i) => i.name).join(', ')})`);
    return integration;
  };
  const checkSecrets = (integration: IntegrationDefinition, secret: Record<string, string>) => {
    const problem = secretsProblem(integration, secret);
    if (problem) throw badRequest(problem);
  };
  const missing = (name: string, workspace: string) => notFound(`integration connection '${name}' not found in workspace '${workspace}'`);

  app.get('/v0/integrations', { schema: { tags, summary: 'List the integration catalog', response: { 200: Type.Array(Integration), ...commonErrors } } }, async () =>
    INTEGRATIONS.map(describe),
  );

  app.get(
    '/v0/integrations/:name',
    { schema: { tags, summary: 'Get one integration of the catalog', params: NameParam, response: { 200: Integration, ...commonErrors } } },
    async (request) => {
      const integration = findIntegration(request.params.name);
      if (!integration) throw notFound(`integration '${request.params.name}' is not in the catalog`);
      return describe(integration);
    },
  );

  app.get(
    '/v0/integrations/connections',
    { schema: { tags, summary: 'List integration connections', response: { 200: Type.Array(Connection), ...commonErrors } } },
    async (request) => (await store.list(requestWorkspace(request).id)).map(envelope),
  );

  app.post(
    '/v0/integrations/connections',
    {
      schema: { tags, summary: 'Create an integration connection', body: ConnectionCreate, response: { 200: Connection, 409: commonErrors[400], ...commonErrors } },
    },
    async (request) => {
      const workspace = requestWorkspace(request);
      const { metadata, spec } = request.body;
      const integration = integrationNamed(spec.integration);
      checkSecrets(integration, spec.secret);
      const created = await store.create(
        workspace.id,
        { name: metadata.name, displayName: metadata.displayName, labels: metadata.labels ?? {}, integration: integration.name, secret: spec.secret },
        request.principal.clientId,
      );
      if (!created) throw conflict(`integration connection '${metadata.name}' already exists in workspace '${workspace.name}'`);
      return envelope(created);
    },
  );

  app.get(
    '/v0/integrations/connections/:name',
    { schema: { tags, summary: 'Get an integration connection', params: NameParam, response: { 200: Connection, ...commonErrors } } },
    async (request) => {
      const workspace = requestWorkspace(request);
      const row = await store.get(workspace.id, request.params.name);
      if (!row) throw missing(request.params.name, workspace.name);
      return envelope(row);
    },
  );

  app.put(
    '/v0/integrations/connections/:name',
    {
      schema: {
        tags,
        summary: 'Update an integration connection; new secrets restart the functions bound to it',
        params: NameParam,
        body: ConnectionUpdate,
        response: { 200: Connection, 503: commonErrors[400], ...commonErrors },
      },
    },
    async (request) => {
      const workspace = requestWorkspace(request);
      const { metadata, spec } = request.body;
      assertNameUnchanged(metadata.name, request.params.name);
      const current = await store.get(workspace.id, request.params.name);
      if (!current) throw missing(request.params.name, workspace.name);
      if (spec?.integration !== undefined && spec.integration !== current.integration) {
        throw badRequest(`spec.integration cannot change (it is '${current.integration}'): create another connection`);
      }
      const stored = await store.openSecrets(current);
      const secret = spec?.secret ? mergeSecretUpdate(stored, spec.secret) : stored;
      checkSecrets(integrationNamed(current.integration), secret);
      const input = { displayName: metadata.displayName, labels: metadata.labels ?? current.labels, secret };
      if (!(await store.update(current, input, request.principal.clientId))) throw missing(request.params.name, workspace.name);
      const updated = envelope((await store.get(workspace.id, request.params.name)) ?? current);
      if (sameSecrets(stored, secret)) return updated;
      // New secrets reach the running servers bound to the connection before the PUT returns:
      // a call made after it is served with them (see connection-rollout.ts).
      const targets = await startConnectionRollout(app, workspace, request.params.name, request.principal.clientId).catch((err: Error) => {
        request.log.warn({ err: err.message, connection: request.params.name }, 'could not restart the functions bound to a connection');
        throw new ApiError(
          503,
          'unavailable',
          `integration connection '${request.params.name}' was updated, but the functions bound to it could not be restarted with the new secrets ` +
            '(the workflow service is unavailable): PUT those functions again to restart them',
        );
      });
      return { ...updated, status: { rollout: await awaitConnectionRollout(app.pg, targets, { timeoutMs: ROLLOUT_WAIT_MS }) } };
    },
  );

  app.delete(
    '/v0/integrations/connections/:name',
    {
      schema: { tags, summary: 'Delete an integration connection', params: NameParam, response: { 200: Connection, 409: commonErrors[400], ...commonErrors } },
    },
    async (request) => {
      const workspace = requestWorkspace(request);
      const users = await store.boundWorkloads(workspace.id, request.params.name);
      if (users.length > 0) {
        const named = (kind: string, label: string) => {
          const names = users.filter((user) => user.kind === kind).map((user) => `'${user.name}'`);
          return names.length > 0 ? [`${label}(s) ${names.join(', ')}`] : [];
        };
        const list = [...named('functions', 'function'), ...named('models', 'model')].join(' and ');
        throw new ApiError(409, 'conflict', `integration connection '${request.params.name}' is used by ${list}: delete or rebind them first`, { code: 409 });
      }
      const deleted = await store.delete(workspace.id, request.params.name);
      if (!deleted) throw missing(request.params.name, workspace.name);
      return envelope(deleted);
    },
  );
}
