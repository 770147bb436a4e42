import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { workloadState } from '../../../domain/workloads/workload';
import { DisplayName, Labels, NameParam, ResourceName, commonErrors } from '../common-schemas';
import { requestWorkspace } from '../workspace-context';
import { envelopeSchema, toEnvelope } from './envelope';
import { findNamed } from './named';
import type { ResourceKind } from './kinds';
import { createResource, deleteResource, updateResource, type ResourceServices } from './resource-service';
import { ResourceStore, type ResourceRow } from '../../../store/resources';

/** Read-only metadata sent back by clients (workspace, createdAt, ...) is accepted and ignored. */
const MetadataInput = Type.Object(
  { name: ResourceName, displayName: Type.Optional(DisplayName), labels: Type.Optional(Labels) },
  { additionalProperties: true },
);

/**
 * CRUD for one workload kind under /v0/{kind}, in the workspace named by X-Service-Workspace.
 * Lists are JSON arrays (version 2026-04-16).
 */
export function resourceRoutes(kind: ResourceKind) {
  const Envelope = envelopeSchema({
    state: Type.Union([Type.Literal('RUNNING'), Type.Literal('SCALED_TO_ZERO'), Type.Null()], {
      description: "Whether the serving revision's process runs, or was stopped for being idle (`spec.runtime.minScale: 0`) and starts again on the next request; null while nothing serves.",
    }),
  });
  const Input = Type.Object({ metadata: MetadataInput, spec: Type.Optional(kind.spec) }, { additionalProperties: true });
  const tags = [kind.path];

  return async function routes(fastify: FastifyInstance) {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    const services: ResourceServices = { store: new ResourceStore(app.pg), pg: app.pg, nodesHaveNetwork: app.config.sandboxNetwork };
    const envelope = (row: ResourceRow) => ({
      ...toEnvelope(row, kind.url(app.config, row.workspace, row.name)),
      state: workloadState(row.status, row.state),
    });

    app.get(
      `/v0/${kind.path}`,
      { schema: { tags, summary: `List ${kind.path}`, response: { 200: Type.Array(Envelope), ...commonErrors } } },
      async (request) => (await services.store.list(requestWorkspace(request).id, kind.path)).map(envelope),
    );

    app.post(
      `/v0/${kind.path}`,
      { schema: { tags, summary: `Create a ${kind.singular}`, body: Input, response: { 200: Envelope, 409: commonErrors[400], ...commonErrors } } },
      async (request) => envelope(await createResource(services, kind, requestWorkspace(request), request.body, request.principal.clientId)),
    );

    app.get(
      `/v0/${kind.path}/:name`,
      { schema: { tags, summary: `Get a ${kind.singular}`, params: NameParam, response: { 200: Envelope, ...commonErrors } } },
      async (request) => envelope(await findNamed(services.store, kind.path, kind.singular, requestWorkspace(request), request.params.name)),
    );

    app.put(
      `/v0/${kind.path}/:name`,
      { schema: { tags, summary: `Update a ${kind.singular}`, params: NameParam, body: Input, response: { 200: Envelope, ...commonErrors } } },
      async (request) =>
        envelope(await updateResource(services, kind, requestWorkspace(request), request.params.name, request.body, request.principal.clientId)),
    );

    app.delete(
      `/v0/${kind.path}/:name`,
      { schema: { tags, summary: `Delete a ${kind.singular}`, params: NameParam, response: { 200: Envelope, ...commonErrors } } },
      async (request) => envelope(await deleteResource(services, kind, requestWorkspace(request), request.params.name)),
    );
  };
}
