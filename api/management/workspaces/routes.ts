import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Principal } from '../../../domain/principal';
import type { WorkspaceRow } from '../../../store/workspaces';
import { DisplayName, Labels, NameParam, ResourceName, commonErrors } from '../common-schemas';
import { NetworkSpecSchema } from '../network-schema';
import { callerWorkspaces, changeWorkspace, createWorkspace, removeWorkspace, visibleWorkspace } from './workspace-service';

const tags = ['workspaces'];
const Workspace = Type.Object({
  id: Type.String(),
  name: Type.String(),
  displayName: Type.String(),
  labels: Type.Record(Type.String(), Type.String()),
  accountId: Type.String(),
  role: Type.String({ description: "The caller's role in the workspace." }),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
  createdBy: Type.Union([Type.String(), Type.Null()]),
  updatedBy: Type.Union([Type.String(), Type.Null()]),
  defaultSandboxNetwork: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], {
    description: "The spec.network its new sandboxes get when they give none (null: none; the platform's default applies).",
  }),
});

const CreateWorkspace = Type.Object(
  { name: ResourceName, displayName: Type.Optional(DisplayName), labels: Type.Optional(Labels) },
  { additionalProperties: false },
);
const UpdateWorkspace = Type.Object(
  {
    displayName: Type.Optional(DisplayName),
    labels: Type.Optional(Labels),
    defaultSandboxNetwork: Type.Optional(Type.Union([NetworkSpecSchema, Type.Null()], { description: "Default spec.network of the workspace's new sandboxes; null removes it." })),
  },
  { additionalProperties: false },
);

const createSchema = { tags, summary: 'Create a workspace (account admin)', body: CreateWorkspace, response: { 200: Workspace, 409: commonErrors[400], ...commonErrors } };
const updateSchema = { tags, summary: 'Update display name, labels or the default sandbox network (workspace admin)', params: NameParam, body: UpdateWorkspace, response: { 200: Workspace, ...commonErrors } };
const deleteSchema = { tags, summary: 'Delete a workspace and everything in it (account admin)', params: NameParam, response: { 200: Workspace, ...commonErrors } };

/** A workspace as the API shows it to `caller`, with the caller's role in it. */
function toWorkspace(row: WorkspaceRow, caller: Principal) {
  return {
    id: row.id,
    name: row.name,
    displayName: row.display_name,
    labels: row.labels,
    accountId: row.account_id,
    role: caller.accountAdmin ? 'admin' : (caller.workspaces.get(row.name)?.role ?? 'member'),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    createdBy: row.created_by,
    updatedBy: row.updated_by,
    defaultSandboxNetwork: row.default_sandbox_network,
  };
}

/** /v0/workspaces: the workspaces of an account (workspace-service.ts says who may do what). */
export default async function workspaceRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const pg = app.pg;

  app.get(
    '/v0/workspaces',
    { schema: { tags, summary: 'Workspaces the caller belongs to', response: { 200: Type.Array(Workspace), ...commonErrors } } },
    async (request) => (await callerWorkspaces(pg, request.principal)).map((row) => toWorkspace(row, request.principal)),
  );
  app.post('/v0/workspaces', { schema: createSchema }, async (request) => toWorkspace(await createWorkspace(pg, request.principal, request.body), request.principal));
  app.get(
    '/v0/workspaces/:name',
    { schema: { tags, params: NameParam, response: { 200: Workspace, ...commonErrors } } },
    async (request) => toWorkspace(await visibleWorkspace(pg, request.principal, request.params.name), request.principal),
  );
  app.put('/v0/workspaces/:name', { schema: updateSchema }, async (request) =>
    toWorkspace(await changeWorkspace(pg, request.principal, request.params.name, request.body, app.config.sandboxNetwork), request.principal),
  );
  app.delete('/v0/workspaces/:name', { schema: deleteSchema }, async (request) =>
    toWorkspace(await removeWorkspace(pg, request.principal, request.params.name), request.principal),
  );
}
