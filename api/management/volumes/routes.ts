import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { WorkflowIdConflictPolicy } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { Type } from 'typebox';
import { nodeTaskQueue } from '../../../domain/config';
import { volumeWorkflowId, type VolumeKey, type VolumeSpec } from '../../../domain/volume/volume';
import type { VolumeLifecycleInput, volumeLifecycle } from '../../../workflows/volume-lifecycle';
import { badRequest, conflict } from '../../../domain/errors';
import { NameParam, commonErrors } from '../common-schemas';
import { toEnvelope } from '../resources/envelope';
import { assertNameUnchanged, findNamed, missingResource } from '../resources/named';
import { startOwningWorkflow } from '../resources/owning-workflow';
import { ResourceStore, type ResourceRow } from '../../../store/resources';
import { requestWorkspace } from '../workspace-context';
import { VolumeEnvelope, VolumeInput } from './schemas';

const KIND = 'volumes';
const tags = ['volumes'];

/** Names of the sandboxes (not being deleted) of a workspace that mount a volume. */
export async function sandboxesMounting(pg: Pool, workspaceId: string, volume: string): Promise<string[]> {
  const { rows } = await pg.query<{ name: string }>(
    `SELECT name FROM resources
      WHERE workspace_id = $1 AND kind = 'sandboxes' AND status <> 'DELETING'
        AND spec->'volumes' @> jsonb_build_array(jsonb_build_object('name', $2::text))
      ORDER BY name`,
    [workspaceId, volume],
  );
  return rows.map((row) => row.name);
}

/**
 * /v0/volumes: persistent folders with a size, mounted into sandboxes, that outlive them. The
 * storage is made, metered and removed by the volume's workflow, `volume/<workspace>/<name>`.
 */
export default async function volumeRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const store = new ResourceStore(app.pg);
  const config = app.config;

  function lifecycleInput(row: ResourceRow, workspaceId: string, phase: VolumeLifecycleInput['phase']): VolumeLifecycleInput {
    const key: VolumeKey = { id: row.id, workspace: row.workspace, workspaceId, name: row.name };
    return { key, sizeMb: (row.spec as unknown as VolumeSpec).size, nodeQueue: nodeTaskQueue(config), phase };
  }

  const envelope = (row: ResourceRow) => toEnvelope(row, `/v0/${KIND}/${row.name}`);
  const missing = (name: string, workspace: string) => missingResource('volume', name, workspace);

  app.get(
    `/v0/${KIND}`,
    { schema: { tags, summary: 'List volumes', response: { 200: Type.Array(VolumeEnvelope), ...commonErrors } } },
    async (request) => (await store.list(requestWorkspace(request).id, KIND)).map(envelope),
  );

  app.post(
    `/v0/${KIND}`,
    {
      schema: {
        tags,
        summary: 'Create a volume; it is DEPLOYING until its storage exists',
        body: VolumeInput,
        response: { 200: VolumeEnvelope, 409: commonErrors[400], ...commonErrors },
      },
    },
    async (request) => {
      const workspace = requestWorkspace(request);
      const { metadata, spec } = request.body;
      const row = await store.create(
        { workspaceId: workspace.id, kind: KIND, name: metadata.name },
        { displayName: metadata.displayName ?? metadata.name, labels: metadata.labels ?? {}, spec: { size: spec.size } },
        'DEPLOYING',
        'creating the volume',
        request.principal.clientId,
      );
      if (!row) throw conflict(`volume '${metadata.name}' already exists in workspace '${workspace.name}'`);
      await startOwningWorkflow(store, row.id, () =>
        app.temporal.workflow.start<typeof volumeLifecycle>('volumeLifecycle', {
          taskQueue: config.taskQueue,
          workflowId: volumeWorkflowId(workspace.name, row.name),
          workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
          args: [lifecycleInput(row, workspace.id, 'create')],
        }),
      );
      return envelope(row);
    },
  );

  app.get(
    `/v0/${KIND}/:name`,
    { schema: { tags, summary: 'Get a volume', params: NameParam, response: { 200: VolumeEnvelope, ...commonErrors } } },
    async (request) => {
      const workspace = requestWorkspace(request);
      const row = await findNamed(store, KIND, 'volume', workspace, request.params.name);
      return envelope(row);
    },
  );

  app.put(
    `/v0/${KIND}/:name`,
    {
      schema: {
        tags,
        summary: 'Update labels and display name, or grow the volume',
        params: NameParam,
        body: VolumeInput,
        response: { 200: VolumeEnvelope, ...commonErrors },
      },
    },
    async (request) => {
      const workspace = requestWorkspace(request);
      const { metadata, spec } = request.body;
      assertNameUnchanged(metadata.name, request.params.name);
      const key = { workspaceId: workspace.id, kind: KIND, name: request.params.name };
      const current = await findNamed(store, KIND, 'volume', workspace, request.params.name);
      const before = (current.spec as unknown as VolumeSpec).size;
      if (spec.size < before) throw badRequest(`body.spec.size ${spec.size} is below the current size ${before}; a volume can only grow`);
      const updated = await store.update(
        key,
        { displayName: metadata.displayName ?? current.display_name, labels: metadata.labels ?? current.labels, spec: { size: spec.size } },
        request.principal.clientId,
      );
      if (!updated) throw missing(request.params.name, workspace.name);
      if (spec.size > before) {
        await app.temporal.workflow.getHandle(volumeWorkflowId(workspace.name, updated.name)).signal('resize', spec.size);
      }
      return envelope(updated);
    },
  );

  app.delete(
    `/v0/${KIND}/:name`,
    {
      schema: {
        tags,
        summary: 'Delete a volume and its files; refused while a sandbox mounts it',
        params: NameParam,
        response: { 200: VolumeEnvelope, 409: commonErrors[400], ...commonErrors },
      },
    },
    async (request) => {
      const workspace = requestWorkspace(request);
      const row = await findNamed(store, KIND, 'volume', workspace, request.params.name);
      const users = await sandboxesMounting(app.pg, workspace.id, row.name);
      if (users.length > 0) throw conflict(`volume '${row.name}' is mounted by sandbox ${users.map((name) => `'${name}'`).join(', ')}; delete those first`);
      await app.temporal.workflow.signalWithStart<typeof volumeLifecycle, []>('volumeLifecycle', {
        taskQueue: config.taskQueue,
        workflowId: volumeWorkflowId(workspace.name, row.name),
        args: [lifecycleInput(row, workspace.id, 'delete')],
        signal: 'delete',
        signalArgs: [],
      });
      return envelope({ ...row, status: 'DELETING' });
    },
  );
}
