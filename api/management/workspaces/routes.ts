import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { newId } from '../../../domain/ids';
import { conflict, forbidden, notFound } from '../../../domain/errors';
import { isUniqueViolation } from '../../../store/pg-errors';
import { DisplayName, Labels, NameParam, ResourceName, commonErrors } from '../common-schemas';
import { requireAccountAdmin } from '../workspace-context';

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
});

const CreateWorkspace = Type.Object(
  { name: ResourceName, displayName: Type.Optional(DisplayName), labels: Type.Optional(Labels) },
  { additionalProperties: false },
);
const UpdateWorkspace = Type.Object(
  { displayName: Type.Optional(DisplayName), labels: Type.Optional(Labels) },
  { additionalProperties: false },
);

interface WorkspaceRow {
  id: string;
  name: string;
  display_name: string;
  labels: Record<string, string>;
  account_id: string;
  created_at: Date;
  updated_at: Date;
  created_by: string | null;
  updated_by: string | null;
}

const COLUMNS = 'id, name, display_name, labels, account_id, created_at, updated_at, created_by, updated_by';

export default async function workspaceRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  const toWorkspace = (row: WorkspaceRow, request: FastifyRequest) => ({
    id: row.id,
    name: row.name,
    displayName: row.display_name,
    labels: row.labels,
    accountId: row.account_id,
    role: request.principal.accountAdmin ? 'admin' : (request.principal.workspaces.get(row.name)?.role ?? 'member'),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    createdBy: row.created_by,
    updatedBy: row.updated_by,
  });

  /** The workspace row if the caller belongs to it; the same 404 whether it exists or not. */
  async function visibleWorkspace(request: FastifyRequest, name: string): Promise<WorkspaceRow> {
    const grant = request.principal.workspaces.get(name);
    const { rows } = grant
      ? await app.pg.query<WorkspaceRow>(`SELECT ${COLUMNS} FROM workspaces WHERE id = $1`, [grant.id])
      : { rows: [] };
    if (!rows[0]) throw notFound(`workspace '${name}' not found`);
    return rows[0];
  }

  app.get(
    '/v0/workspaces',
    { schema: { tags: ['workspaces'], summary: 'Workspaces the caller belongs to', response: { 200: Type.Array(Workspace), ...commonErrors } } },
    async (request) => {
      const ids = [...request.principal.workspaces.values()].map((w) => w.id);
      const { rows } = await app.pg.query<WorkspaceRow>(`SELECT ${COLUMNS} FROM workspaces WHERE id = ANY($1) ORDER BY name`, [ids]);
      return rows.map((row) => toWorkspace(row, request));
    },
  );

  app.post(
    '/v0/workspaces',
    {
      schema: {
        tags: ['workspaces'],
        summary: 'Create a workspace (account admin)',
        body: CreateWorkspace,
        response: { 200: Workspace, 409: commonErrors[400], ...commonErrors },
      },
    },
    async (request) => {
      requireAccountAdmin(request);
      const { name, displayName, labels } = request.body;
      try {
        const { rows } = await app.pg.query<WorkspaceRow>(
          `INSERT INTO workspaces (id, account_id, name, display_name, labels, created_by, updated_by)
           VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING ${COLUMNS}`,
          [newId('ws'), request.principal.accountId, name, displayName ?? name, labels ?? {}, request.principal.clientId],
        );
        return toWorkspace(rows[0], request);
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict(`workspace '${name}' already exists`);
        throw err;
      }
    },
  );

  app.get(
    '/v0/workspaces/:name',
    { schema: { tags: ['workspaces'], params: NameParam, response: { 200: Workspace, ...commonErrors } } },
    async (request) => toWorkspace(await visibleWorkspace(request, request.params.name), request),
  );

  app.put(
    '/v0/workspaces/:name',
    {
      schema: {
        tags: ['workspaces'],
        summary: 'Update display name or labels (workspace admin)',
        params: NameParam,
        body: UpdateWorkspace,
        response: { 200: Workspace, ...commonErrors },
      },
    },
    async (request) => {
      const current = await visibleWorkspace(request, request.params.name);
      if (request.principal.workspaces.get(current.name)?.role !== 'admin') {
        throw forbidden(`updating workspace '${current.name}' needs the admin role in it`);
      }
      const { rows } = await app.pg.query<WorkspaceRow>(
        `UPDATE workspaces SET display_name = COALESCE($2, display_name), labels = COALESCE($3, labels),
                updated_at = now(), updated_by = $4
          WHERE id = $1 RETURNING ${COLUMNS}`,
        [current.id, request.body.displayName ?? null, request.body.labels ?? null, request.principal.clientId],
      );
      return toWorkspace(rows[0], request);
    },
  );

  app.delete(
    '/v0/workspaces/:name',
    {
      schema: {
        tags: ['workspaces'],
        summary: 'Delete a workspace and everything in it (account admin)',
        params: NameParam,
        response: { 200: Workspace, ...commonErrors },
      },
    },
    async (request) => {
      const current = await visibleWorkspace(request, request.params.name);
      requireAccountAdmin(request);
      await app.pg.query('DELETE FROM workspaces WHERE id = $1', [current.id]);
      return toWorkspace(current, request);
    },
  );
}
