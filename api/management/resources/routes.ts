import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { workloadState } from '../../../domain/workloads/workload';
import { conflict } from '../../../domain/errors';
import { DisplayName, Labels, NameParam, ResourceName, commonErrors } from '../common-schemas';
import { requestWorkspace } from '../workspace-context';
import { envelopeSchema, toEnvelope } from './envelope';
import { assertNameUnchanged, findNamed, missingResource } from './named';
import type { ResourceKind } from './kinds';
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
    const store = new ResourceStore(app.pg);

    const envelope = (row: ResourceRow) => ({ ...toEnvelope(row, kind.url(app.config, row.workspace, row.name)), state: workloadState(row.status, row.state) });
    const missing = (name: string, workspace: string) => missingResource(kind.singular, name, workspace);

    app.get(
      `/v0/${kind.path}`,
      { schema: { tags, summary: `List ${kind.path}`, response: { 200: Type.Array(Envelope), ...commonErrors } } },
      async (request) => {
        const workspace = requestWorkspace(request);
        return (await store.list(workspace.id, kind.path)).map(envelope);
      },
    );

    app.post(
      `/v0/${kind.path}`,
      { schema: { tags, summary: `Create a ${kind.singular}`, body: Input, response: { 200: Envelope, 409: commonErrors[400], ...commonErrors } } },
      async (request) => {
        const workspace = requestWorkspace(request);
        const { metadata, spec } = request.body;
        await kind.validate?.(app, workspace, (spec ?? {}) as Record<string, unknown>);
        const created = await store.create(
          { workspaceId: workspace.id, kind: kind.path, name: metadata.name },
          { displayName: metadata.displayName ?? metadata.name, labels: metadata.labels ?? {}, spec: (spec ?? {}) as Record<string, unknown> },
          kind.initialStatus,
          kind.initialMessage((spec ?? {}) as Record<string, unknown>),
          request.principal.clientId,
        );
        if (!created) throw conflict(`${kind.singular} '${metadata.name}' already exists in workspace '${workspace.name}'`);
        return envelope(created);
      },
    );

    app.get(
      `/v0/${kind.path}/:name`,
      { schema: { tags, summary: `Get a ${kind.singular}`, params: NameParam, response: { 200: Envelope, ...commonErrors } } },
      async (request) => {
        const workspace = requestWorkspace(request);
        const row = await findNamed(store, kind.path, kind.singular, workspace, request.params.name);
        return envelope(row);
      },
    );

    app.put(
      `/v0/${kind.path}/:name`,
      {
        schema: { tags, summary: `Update a ${kind.singular}`, params: NameParam, body: Input, response: { 200: Envelope, ...commonErrors } },
      },
      async (request) => {
        const workspace = requestWorkspace(request);
        const { metadata, spec } = request.body;
        assertNameUnchanged(metadata.name, request.params.name);
        const key = { workspaceId: workspace.id, kind: kind.path, name: request.params.name };
        const current = await findNamed(store, kind.path, kind.singular, workspace, request.params.name);
        const nextSpec = (spec as Record<string, unknown> | undefined) ?? current.spec;
        await kind.validate?.(app, workspace, nextSpec);
        const updated = await store.update(
          key,
          { displayName: metadata.displayName ?? current.display_name, labels: metadata.labels ?? current.labels, spec: nextSpec },
          request.principal.clientId,
        );
        if (!updated) throw missing(request.params.name, workspace.name);
        return envelope(updated);
      },
    );

    app.delete(
      `/v0/${kind.path}/:name`,
      { schema: { tags, summary: `Delete a ${kind.singular}`, params: NameParam, response: { 200: Envelope, ...commonErrors } } },
      async (request) => {
        const workspace = requestWorkspace(request);
        const deleted = await store.delete({ workspaceId: workspace.id, kind: kind.path, name: request.params.name });
        if (!deleted) throw missing(request.params.name, workspace.name);
        return envelope(deleted);
      },
    );
  };
}
