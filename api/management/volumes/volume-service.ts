import { WorkflowIdConflictPolicy, type Client } from '@temporalio/client';
import type { Pool } from 'pg';
import { nodeTaskQueue, type HangarConfig } from '../../../domain/config';
import { badRequest, conflict } from '../../../domain/errors';
import type { WorkspaceGrant } from '../../../domain/principal';
import { volumeWorkflowId, type VolumeKey, type VolumeSpec } from '../../../domain/volume/volume';
import type { ResourceRow, ResourceStore } from '../../../store/resources';
import { sandboxesMounting } from '../../../store/volume-mounts';
import type { VolumeLifecycleInput, volumeLifecycle } from '../../../workflows/volume-lifecycle';
import { assertNameUnchanged, createNamed, findNamed, updateNamed, type MetadataInput } from '../resources/named';
import { deleteThroughWorkflow, startOwningWorkflow } from '../resources/owning-workflow';

export const VOLUMES = { path: 'volumes', singular: 'volume' };

/** What the volume operations work with: the resource rows, the database, Temporal and the platform's settings. */
export interface VolumeServices {
  store: ResourceStore;
  pg: Pool;
  temporal: Client;
  config: HangarConfig;
}

export interface VolumeRequest {
  metadata: MetadataInput;
  spec: VolumeSpec;
}

function lifecycleInput(config: HangarConfig, row: ResourceRow, workspaceId: string, phase: VolumeLifecycleInput['phase']): VolumeLifecycleInput {
  const key: VolumeKey = { id: row.id, workspace: row.workspace, workspaceId, name: row.name };
  // A placed volume's cleanup runs on its node; a new one is placed by its workflow (this queue is where unplaced ones are).
  const nodeQueue = nodeTaskQueue({ taskQueue: config.taskQueue, nodeId: row.node_id ?? config.nodeId });
  return { key, sizeMb: (row.spec as unknown as VolumeSpec).size, nodeQueue, phase };
}

export function findVolume(services: VolumeServices, workspace: WorkspaceGrant, name: string): Promise<ResourceRow> {
  return findNamed(services.store, VOLUMES.path, VOLUMES.singular, workspace, name);
}

/** Inserts the volume as DEPLOYING and starts its lifecycle workflow, which makes its storage. */
export async function createVolume(services: VolumeServices, workspace: WorkspaceGrant, body: VolumeRequest, actor: string): Promise<ResourceRow> {
  const { store, temporal, config } = services;
  const row = await createNamed(store, workspace, VOLUMES, { metadata: body.metadata, spec: { size: body.spec.size }, status: 'DEPLOYING', message: 'creating the volume', actor });
  await startOwningWorkflow(store, row.id, () =>
    temporal.workflow.start<typeof volumeLifecycle>('volumeLifecycle', {
      taskQueue: config.taskQueue,
      workflowId: volumeWorkflowId(workspace.name, row.name),
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      args: [lifecycleInput(config, row, workspace.id, 'create')],
    }),
  );
  return row;
}

/** Stores new labels, display name or a larger size; a larger size is handed to the lifecycle, which grows the storage. */
export async function updateVolume(services: VolumeServices, workspace: WorkspaceGrant, name: string, body: VolumeRequest, actor: string): Promise<ResourceRow> {
  assertNameUnchanged(body.metadata.name, name);
  const current = await findVolume(services, workspace, name);
  const before = (current.spec as unknown as VolumeSpec).size;
  const size = body.spec.size;
  if (size < before) throw badRequest(`body.spec.size ${size} is below the current size ${before}; a volume can only grow`);
  const updated = await updateNamed(services.store, workspace, VOLUMES, current, { metadata: body.metadata, spec: { size }, actor });
  if (size > before) await services.temporal.workflow.getHandle(volumeWorkflowId(workspace.name, updated.name)).signal('resize', size);
  return updated;
}

/** Hands the volume to its lifecycle's delete phase, unless a sandbox still mounts it (409); the row as it now reads. */
export async function deleteVolume(services: VolumeServices, workspace: WorkspaceGrant, name: string): Promise<ResourceRow> {
  const row = await findVolume(services, workspace, name);
  const users = await sandboxesMounting(services.pg, workspace.id, row.name);
  if (users.length > 0) throw conflict(`volume '${row.name}' is mounted by sandbox ${users.map((user) => `'${user}'`).join(', ')}; delete those first`);
  await deleteThroughWorkflow<typeof volumeLifecycle>(services.temporal, 'volumeLifecycle', {
    taskQueue: services.config.taskQueue,
    workflowId: volumeWorkflowId(workspace.name, row.name),
    input: lifecycleInput(services.config, row, workspace.id, 'delete'),
  });
  return { ...row, status: 'DELETING' };
}
