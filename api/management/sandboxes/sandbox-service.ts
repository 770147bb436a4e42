import { WorkflowExecutionAlreadyStartedError, WorkflowIdConflictPolicy, type Client } from '@temporalio/client';
import type { Pool } from 'pg';
import { nodeTaskQueue, type HangarConfig } from '../../../domain/config';
import { ApiError, badRequest, conflict } from '../../../domain/errors';
import type { WorkspaceGrant } from '../../../domain/principal';
import type { ResourceStatus } from '../../../domain/resource';
import { sandboxWorkflowId, type SandboxKey, type SandboxSpec } from '../../../domain/sandbox/sandbox';
import { resolvedNetwork } from '../../../domain/sandbox/network-defaults';
import { networkUnavailableProblem } from '../../../domain/sandbox/network-policy';
import { sandboxSpecChangeProblem, sandboxSpecProblem } from '../../../domain/sandbox/spec-rules';
import { withRecordedImage } from '../../../domain/images/recorded-image';
import { volumeMountError } from '../../../runtime/bwrap-args';
import type { WorkspaceImageStore } from '../../../store/workspace-images';
import type { ResourceRow, ResourceStore } from '../../../store/resources';
import { workspaceSandboxNetwork } from '../../../store/workspaces';
import type { SandboxLifecycleInput, sandboxLifecycle } from '../../../workflows/sandbox-lifecycle';
import { assertNameUnchanged, createNamed, findNamed, updateNamed, type MetadataInput } from '../resources/named';
import { deleteThroughWorkflow, startOwningWorkflow } from '../resources/owning-workflow';
import { checkRegistryConnection } from './registry-connection';
import { checkImageReference, checkOwnImage } from '../images/runtime-image';

export const SANDBOXES = { path: 'sandboxes', singular: 'sandbox' };

/** What the sandbox operations work with: the resource rows, the database (workspace defaults), Temporal and the platform's settings. */
export interface SandboxServices {
  store: ResourceStore;
  /** Where the workspace's integration connections are looked up (a registry's credentials). */
  pg: Pool;
  temporal: Client;
  config: HangarConfig;
  /** The workspaces' own images, which `spec.runtime.image` may name as `name[:tag]`. */
  images: WorkspaceImageStore;
}

export interface SandboxRequest {
  metadata: MetadataInput;
  spec?: SandboxSpec;
}

function lifecycleInput(
  config: HangarConfig,
  row: ResourceRow,
  workspaceId: string,
  phase: SandboxLifecycleInput['phase'],
  seedSnapshotId?: string,
): SandboxLifecycleInput {
  const key: SandboxKey = { id: row.id, workspace: row.workspace, workspaceId, name: row.name };
  return {
    key,
    spec: row.spec as SandboxSpec,
    // A placed sandbox's cleanup runs on its node; a new one is placed by its workflow (this queue is where unplaced ones are).
    nodeQueue: nodeTaskQueue({ taskQueue: config.taskQueue, nodeId: row.node_id ?? config.nodeId }),
    idleTimeoutMs: config.sandboxIdleSeconds * 1000,
    createdAt: row.created_at.getTime(),
    phase,
    ...(seedSnapshotId ? { seedSnapshotId } : {}),
  };
}

/** The workflow's copy of the spec carries the volumes' uuids, so the node needs no database. */
function withVolumeIds(input: SandboxLifecycleInput, volumeIds: string[]): SandboxLifecycleInput {
  if (!input.spec.volumes?.length) return input;
  return { ...input, spec: { ...input.spec, volumes: input.spec.volumes.map((volume, i) => ({ ...volume, volumeId: volumeIds[i] })) } };
}

/** Checks the spec; an image named `name[:tag]` is checked against the workspace's images next (checkOwnImage). */
function checkSpec(config: HangarConfig, spec: SandboxSpec, before?: SandboxSpec): void {
  const problem = sandboxSpecProblem(spec, Date.now(), before);
  if (problem) throw badRequest(problem);
  // A policy the nodes would not apply is refused rather than kept as if it were.
  const unavailable = networkUnavailableProblem(spec.network, config.sandboxNetwork);
  if (unavailable) throw badRequest(unavailable);
  checkImageReference(spec.runtime?.image);
}

/**
 * Checks each volume the sandbox mounts (it exists here and is DEPLOYED, its mountPath is
 * allowed) and returns their uuids in spec order, for the node.
 */
async function resolveVolumes(store: ResourceStore, workspace: WorkspaceGrant, spec: SandboxSpec): Promise<string[]> {
  const ids: string[] = [];
  const paths = new Set<string>();
  for (const [i, volume] of (spec.volumes ?? []).entries()) {
    const pathProblem = volumeMountError(volume.mountPath);
    if (pathProblem) throw badRequest(`body.spec.volumes[${i}].mountPath: ${pathProblem}`);
    if (paths.has(volume.mountPath)) throw badRequest(`body.spec.volumes[${i}].mountPath '${volume.mountPath}' is used by another volume`);
    paths.add(volume.mountPath);
    const row = await store.get({ workspaceId: workspace.id, kind: 'volumes', name: volume.name });
    if (!row) throw badRequest(`body.spec.volumes[${i}].name: volume '${volume.name}' not found in workspace '${workspace.name}'`);
    if (row.status !== 'DEPLOYED') throw badRequest(`body.spec.volumes[${i}].name: volume '${volume.name}' is ${row.status}, not DEPLOYED`);
    ids.push(row.id);
  }
  return ids;
}

/**
 * The spec with the network policy it gets: its own `spec.network`, else its workspace's default,
 * else the platform's (domain/sandbox/network-defaults.ts). The resolved policy is stored in the
 * spec, so the sandbox keeps it when a default changes later. Where nodes give no network, no
 * default applies (every sandbox has loopback only).
 */
async function withDefaultNetwork(services: SandboxServices, workspace: WorkspaceGrant, spec: SandboxSpec): Promise<SandboxSpec> {
  if (spec.network !== undefined || !services.config.sandboxNetwork) return spec;
  const network = resolvedNetwork(undefined, await workspaceSandboxNetwork(services.pg, workspace.id), services.config.sandboxDefaultNetwork);
  return network ? { ...spec, network } : spec;
}

export function findSandbox(services: SandboxServices, workspace: WorkspaceGrant, name: string): Promise<ResourceRow> {
  return findNamed(services.store, SANDBOXES.path, SANDBOXES.singular, workspace, name);
}

/**
 * Inserts the sandbox as DEPLOYING and starts its lifecycle workflow, which starts it; a fork
 * names the snapshot whose files it starts with.
 */
export async function createSandbox(services: SandboxServices, workspace: WorkspaceGrant, body: SandboxRequest, actor: string, seedSnapshotId?: string): Promise<ResourceRow> {
  const { store, config } = services;
  const spec = withRecordedImage(await withDefaultNetwork(services, workspace, body.spec ?? {}), undefined);
  checkSpec(config, spec);
  await checkOwnImage(services.images, workspace, spec.runtime?.image);
  await checkRegistryConnection(services.pg, workspace, spec);
  const volumeIds = await resolveVolumes(store, workspace, spec);
  const insert = () => createNamed(store, workspace, SANDBOXES, { metadata: body.metadata, spec: spec as Record<string, unknown>, status: 'DEPLOYING', message: 'creating the sandbox', actor });
  const row = await insertOverFailed(services, workspace, body.metadata.name, insert);
  const input = withVolumeIds(lifecycleInput(config, row, workspace.id, 'create', seedSnapshotId), volumeIds);
  await startOwningWorkflow(store, row.id, () => startLifecycle(services, workspace, input));
  return row;
}

/** Longest a create waits for the lifecycle of the previous sandbox of its name to end. */
const PREVIOUS_LIFE_WAIT_MS = 30_000;

/** Whether the lifecycle run of that id ended within PREVIOUS_LIFE_WAIT_MS (or was not running). */
function previousLifeEnded(temporal: Client, workflowId: string): Promise<boolean> {
  return Promise.race([
    temporal.workflow.getHandle(workflowId).result().then(() => true, () => true),
    new Promise<false>((resolve) => setTimeout(() => resolve(false), PREVIOUS_LIFE_WAIT_MS).unref()),
  ]);
}

/**
 * Inserts the sandbox's row; a FAILED sandbox of that name gives it up, as in the reference (whose
 * SDK creates again at once over a failed one): it is deleted, and the insert is made again once
 * its lifecycle has ended. Only a create whose name is taken looks at what holds it.
 */
async function insertOverFailed(services: SandboxServices, workspace: WorkspaceGrant, name: string, insert: () => Promise<ResourceRow>): Promise<ResourceRow> {
  try {
    return await insert();
  } catch (err) {
    if (!(err instanceof ApiError) || err.statusCode !== 409) throw err;
    const existing = await services.store.get({ workspaceId: workspace.id, kind: SANDBOXES.path, name });
    if (existing?.status !== 'FAILED') throw err;
  }
  await deleteSandbox(services, workspace, name);
  if (!(await previousLifeEnded(services.temporal, sandboxWorkflowId(workspace.name, name)))) {
    throw conflict(`the failed sandbox named '${name}' is still being removed; retry shortly`);
  }
  return insert();
}

/**
 * Starts a new sandbox's lifecycle. The lifecycle of the previous sandbox of that name deletes its
 * row as its very last step, so a create can come in while that run is still closing: joining it
 * would leave the new sandbox never started. That run is waited for instead, then the new one
 * starts, unless a delete of the new sandbox started its lifecycle meanwhile (its row is gone).
 */
async function startLifecycle(services: SandboxServices, workspace: WorkspaceGrant, input: SandboxLifecycleInput): Promise<void> {
  const { temporal, config, store } = services;
  const workflowId = sandboxWorkflowId(workspace.name, input.key.name);
  const start = (workflowIdConflictPolicy: WorkflowIdConflictPolicy) =>
    temporal.workflow.start<typeof sandboxLifecycle>('sandboxLifecycle', { taskQueue: config.taskQueue, workflowId, workflowIdConflictPolicy, args: [input] });
  try {
    await start(WorkflowIdConflictPolicy.FAIL);
    return;
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
  if (!(await previousLifeEnded(temporal, workflowId))) throw conflict(`the previous sandbox named '${input.key.name}' is still being removed; retry shortly`);
  if (!(await store.get({ workspaceId: workspace.id, kind: SANDBOXES.path, name: input.key.name }))) return;
  await start(WorkflowIdConflictPolicy.USE_EXISTING);
}

/**
 * Statuses of a sandbox that a create asking for it if it exists cannot hand back: it is going
 * (or failed, and a create replaces it first). The create answers 409 for them, as for any taken
 * name: the reference SDK then waits for the sandbox to go and creates it again.
 */
const NOT_REUSABLE: readonly ResourceStatus[] = ['FAILED', 'DEACTIVATING', 'DEACTIVATED', 'TERMINATED', 'DELETING'];

/**
 * `createIfNotExist=true`: the sandbox of that name if it exists and lives, else a new one. Any
 * number of such calls at once make one sandbox: the insert decides (one row per name), and the
 * others read the row it made.
 */
export async function createSandboxIfNotExists(services: SandboxServices, workspace: WorkspaceGrant, body: SandboxRequest, actor: string): Promise<ResourceRow> {
  try {
    return await createSandbox(services, workspace, body, actor);
  } catch (err) {
    if (!(err instanceof ApiError) || err.statusCode !== 409) throw err;
    const existing = await services.store.get({ workspaceId: workspace.id, kind: SANDBOXES.path, name: body.metadata.name });
    if (!existing || NOT_REUSABLE.includes(existing.status)) throw err;
    return existing;
  }
}

/** Stores new labels, display name, ttl, expiration policies, envs or network policy and hands the spec to the running lifecycle. */
export async function updateSandbox(services: SandboxServices, workspace: WorkspaceGrant, name: string, body: SandboxRequest, actor: string): Promise<ResourceRow> {
  assertNameUnchanged(body.metadata.name, name);
  const current = await findSandbox(services, workspace, name);
  const before = current.spec as SandboxSpec;
  // A spec given without a network policy gets the defaults again, as at the create.
  // And one naming no image keeps the image recorded (which cannot change).
  const next = body.spec ? withRecordedImage(await withDefaultNetwork(services, workspace, body.spec), before) : before;
  checkSpec(services.config, next, before);
  await checkOwnImage(services.images, workspace, next.runtime?.image, before.runtime?.image);
  const changeProblem = sandboxSpecChangeProblem(before, next);
  if (changeProblem) throw badRequest(changeProblem);
  await checkRegistryConnection(services.pg, workspace, next);
  const updated = await updateNamed(services.store, workspace, SANDBOXES, current, { metadata: body.metadata, spec: next as Record<string, unknown>, actor });
  // A lifecycle that is gone (the sandbox is being deleted) has nothing to apply the spec to.
  await services.temporal.workflow.getHandle(sandboxWorkflowId(workspace.name, updated.name)).signal('spec', next).catch(() => undefined);
  return updated;
}

/**
 * Signals the running lifecycle to delete the sandbox, or starts one in its delete phase if it is
 * gone, then marks it DELETING at once (unless its lifecycle moved it meanwhile): from the moment
 * this answers, nobody is handed the sandbox as a living one (createIfNotExist, the gateway), and
 * a start finishing late does not mark it DEPLOYED again. The row as it now reads.
 */
export async function deleteSandbox(services: SandboxServices, workspace: WorkspaceGrant, name: string): Promise<ResourceRow> {
  const row = await findSandbox(services, workspace, name);
  await deleteThroughWorkflow<typeof sandboxLifecycle>(services.temporal, 'sandboxLifecycle', {
    taskQueue: services.config.taskQueue,
    workflowId: sandboxWorkflowId(workspace.name, row.name),
    input: lifecycleInput(services.config, row, workspace.id, 'delete'),
  });
  if (row.status !== 'DELETING') await services.store.transition(row.id, 'DELETING', { type: 'Normal', message: 'deletion requested' }, undefined, row.status);
  return { ...row, status: 'DELETING' };
}
