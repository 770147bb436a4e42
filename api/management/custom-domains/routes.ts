import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { HangarConfig } from '../../../domain/config';
import type { CustomDomainSpec } from '../../../domain/custom-domain/custom-domain';
import { StateHistory } from '../../../store/state-history';
import { NameParam, commonErrors } from '../common-schemas';
import { toEnvelope } from '../resources/envelope';
import { ResourceStore, type ResourceRow } from '../../../store/resources';
import { requestWorkspace } from '../workspace-context';
import { CustomDomainEnvelope, CustomDomainInput } from './schemas';
import {
  CUSTOM_DOMAINS,
  createCustomDomain,
  deleteCustomDomain,
  findCustomDomain,
  updateCustomDomain,
  type CustomDomainServices,
} from './custom-domain-service';

const KIND = CUSTOM_DOMAINS.path;
const tags = ['customdomains'];

/** Where a domain is reached: the run_url's scheme and port with the domain as host, at the target's path. */
function customDomainUrl(config: HangarConfig, spec: CustomDomainSpec): string {
  const url = new URL(config.runUrl);
  url.hostname = spec.domain;
  url.pathname = spec.target.kind === 'function' ? '/mcp' : '/';
  return url.toString();
}

const createSchema = {
  tags,
  summary: 'Create a custom domain; it is DEPLOYING until it routes',
  body: CustomDomainInput,
  response: { 200: CustomDomainEnvelope, 409: commonErrors[400], ...commonErrors },
};
const updateSchema = {
  tags,
  summary: 'Change the host name, the target, labels or display name of a custom domain',
  params: NameParam,
  body: CustomDomainInput,
  response: { 200: CustomDomainEnvelope, 409: commonErrors[400], ...commonErrors },
};
const deleteSchema = { tags, summary: 'Delete a custom domain; it stops routing at once', params: NameParam, response: { 200: CustomDomainEnvelope, ...commonErrors } };

/**
 * /v0/customdomains: a host name that routes to a workload of the workspace on run_url. The
 * domain's workflow, `customdomain/<workspace>/<name>`, activates it, meters it while it exists
 * and removes it (custom-domain-service.ts).
 */
export default async function customDomainRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const services: CustomDomainServices = {
    store: new ResourceStore(app.pg),
    history: new StateHistory(app.pg),
    pg: app.pg,
    temporal: app.temporal,
    config: app.config,
  };
  const envelope = (row: ResourceRow) => toEnvelope(row, customDomainUrl(app.config, row.spec as unknown as CustomDomainSpec));

  app.get(
    `/v0/${KIND}`,
    { schema: { tags, summary: 'List custom domains', response: { 200: Type.Array(CustomDomainEnvelope), ...commonErrors } } },
    async (request) => (await services.store.list(requestWorkspace(request).id, KIND)).map(envelope),
  );
  app.post(`/v0/${KIND}`, { schema: createSchema }, async (request) =>
    envelope(await createCustomDomain(services, requestWorkspace(request), request.body, request.principal.clientId)),
  );
  app.get(
    `/v0/${KIND}/:name`,
    { schema: { tags, summary: 'Get a custom domain', params: NameParam, response: { 200: CustomDomainEnvelope, ...commonErrors } } },
    async (request) => envelope(await findCustomDomain(services, requestWorkspace(request), request.params.name)),
  );
  app.put(`/v0/${KIND}/:name`, { schema: updateSchema }, async (request) =>
    envelope(await updateCustomDomain(services, requestWorkspace(request), request.params.name, request.body, request.principal.clientId)),
  );
  app.delete(`/v0/${KIND}/:name`, { schema: deleteSchema }, async (request) =>
    envelope(await deleteCustomDomain(services, requestWorkspace(request), request.params.name)),
  );
}
