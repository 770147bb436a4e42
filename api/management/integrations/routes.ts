import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { HangarConfig } from '../../../domain/config';
import { findIntegration, INTEGRATIONS, type IntegrationDefinition } from '../../../domain/integrations/catalog';
import { notFound } from '../../../domain/errors';
import { NameParam, commonErrors } from '../common-schemas';
import { requestWorkspace } from '../workspace-context';
import { ConnectionStore, type ConnectionRow } from '../../../store/connections';
import { createConnection, deleteConnection, findConnection, updateConnection, type ConnectionServices } from './connection-service';
import { Connection, ConnectionCreate, ConnectionUpdate, Integration } from './schemas';

const tags = ['integrations'];

/** An integration of the catalog as the API shows it. */
function describeIntegration(config: HangarConfig, integration: IntegrationDefinition) {
  return {
    name: integration.name,
    displayName: integration.displayName,
    description: integration.description,
    secrets: integration.secrets.map((secret) => ({ ...secret })),
    ...(integration.oauth ? { oauth: { authorizationUrl: integration.oauth.endpoints(config).authorizationUrl, scopes: [...integration.oauth.scopes] } } : {}),
    ...(integration.mcp ? { mcp: { tools: [...integration.mcp.tools] } } : {}),
  };
}

/** A connection as the API shows it: its secrets only masked. */
function connectionEnvelope(row: ConnectionRow) {
  return {
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
  };
}

const updateSchema = {
  tags,
  summary: 'Update an integration connection; new secrets restart the functions bound to it',
  params: NameParam,
  body: ConnectionUpdate,
  response: { 200: Connection, 503: commonErrors[400], ...commonErrors },
};

/**
 * The integration catalog and integration connections (endpoint 12). Connection secrets are
 * sealed at rest and leave only masked: the response schemas serialise nothing else.
 */
export default async function integrationRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const services: ConnectionServices = { store: new ConnectionStore(app.pg, app.secrets), pg: app.pg, temporal: app.temporal, config: app.config, log: app.log };
  const describe = (integration: IntegrationDefinition) => describeIntegration(app.config, integration);

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
    async (request) => (await services.store.list(requestWorkspace(request).id)).map(connectionEnvelope),
  );
  app.post(
    '/v0/integrations/connections',
    { schema: { tags, summary: 'Create an integration connection', body: ConnectionCreate, response: { 200: Connection, 409: commonErrors[400], ...commonErrors } } },
    async (request) => connectionEnvelope(await createConnection(services, requestWorkspace(request), request.body, request.principal.clientId)),
  );
  app.get(
    '/v0/integrations/connections/:name',
    { schema: { tags, summary: 'Get an integration connection', params: NameParam, response: { 200: Connection, ...commonErrors } } },
    async (request) => connectionEnvelope(await findConnection(services, requestWorkspace(request), request.params.name)),
  );
  app.put('/v0/integrations/connections/:name', { schema: updateSchema }, async (request) => {
    const workspace = requestWorkspace(request);
    const { row, rollout } = await updateConnection({ ...services, log: request.log }, workspace, request.params.name, request.body, request.principal.clientId);
    return rollout ? { ...connectionEnvelope(row), status: { rollout } } : connectionEnvelope(row);
  });
  app.delete(
    '/v0/integrations/connections/:name',
    { schema: { tags, summary: 'Delete an integration connection', params: NameParam, response: { 200: Connection, 409: commonErrors[400], ...commonErrors } } },
    async (request) => connectionEnvelope(await deleteConnection(services, requestWorkspace(request), request.params.name)),
  );
}
