import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { commonErrors } from '../common-schemas';
import { requestWorkspace } from '../workspace-context';
import { ProvisioningStore, type ProvisioningRow } from '../../../store/provisionings';
import { deleteProvisioning, findProvisioning, startProvisioning, type ProvisioningServices } from './provisioning-service';
import { IdParam, Provisioning, ProvisioningCreate, ProvisioningListQuery } from './schemas';

const tags = ['integrations'];
const DEFAULT_LIST_LIMIT = 100;

/** A provisioning as the API shows it. */
function view(row: ProvisioningRow) {
  return {
    id: row.id,
    workspace: row.workspace,
    integration: row.integration,
    tenant: row.tenant,
    status: row.status,
    ...(row.result ? { result: row.result } : {}),
    ...(row.error ? { error: row.error } : {}),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

const createSchema = {
  tags,
  summary: "Provision a tenant's connection and MCP server from an authorization code",
  body: ProvisioningCreate,
  response: { 202: Provisioning, 503: commonErrors[400], ...commonErrors },
};
const listSchema = { tags, summary: "List the workspace's provisionings, newest first", querystring: ProvisioningListQuery, response: { 200: Type.Array(Provisioning), ...commonErrors } };
const deleteSchema = {
  tags,
  summary: "Delete a finished provisioning's record (the connection and function it made stay)",
  params: IdParam,
  response: { 200: Provisioning, 409: commonErrors[400], ...commonErrors },
};

/**
 * The OAuth-to-MCP provisioning of one tenant (auth steps 4-6) in one call: the customer's
 * backend posts the authorization code its redirect received and polls the run until it has
 * the MCP server's URL (provisioning-service.ts).
 */
export default async function provisioningRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const store = new ProvisioningStore(app.pg);

  app.post('/v0/integrations/provisionings', { schema: createSchema }, async (request, reply) => {
    const services: ProvisioningServices = { store, temporal: app.temporal, secrets: app.secrets, config: app.config, log: request.log };
    const row = await startProvisioning(services, requestWorkspace(request), request.body, request.principal.clientId);
    return reply.status(202).send(view(row));
  });
  app.get('/v0/integrations/provisionings', { schema: listSchema }, async (request) => {
    const { limit, tenant } = request.query;
    return (await store.list(requestWorkspace(request).id, { tenant, limit: limit ?? DEFAULT_LIST_LIMIT })).map(view);
  });
  app.delete('/v0/integrations/provisionings/:id', { schema: deleteSchema }, async (request) =>
    view(await deleteProvisioning(store, requestWorkspace(request), request.params.id)),
  );
  app.get(
    '/v0/integrations/provisionings/:id',
    { schema: { tags, summary: 'Get the status and result of a provisioning', params: IdParam, response: { 200: Provisioning, ...commonErrors } } },
    async (request) => view(await findProvisioning(store, requestWorkspace(request), request.params.id)),
  );
}
