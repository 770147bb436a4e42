import { randomBytes, randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, WorkflowIdConflictPolicy, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { nodeTaskQueue } from '../../../domain/config';
import { badRequest, conflict, notFound } from '../../../domain/errors';
import type { WorkspaceGrant } from '../../../domain/principal';
import type { SandboxEnv, SandboxSpec } from '../../../domain/sandbox/sandbox';
import { sandboxWorkflowId } from '../../../domain/sandbox/sandbox';
import { forkSpec, generatedSnapshotName, snapshotWorkflowId } from '../../../domain/sandbox/snapshot';
import type { ResourceRow } from '../../../store/resources';
import { SandboxSnapshotStore, type SnapshotRow } from '../../../store/sandbox-snapshots';
import type { RestoreRequest } from '../../../activities/sandbox-node';
import type { SnapshotLifecycleInput, snapshotLifecycle } from '../../../workflows/snapshot-lifecycle';
import type { CaptureNotices } from './capture-notices';
import { deleteThroughWorkflow } from '../resources/owning-workflow';
import { createSandbox, findSandbox, type SandboxServices } from '../sandboxes/sandbox-service';

/** What snapshot operations work with: the sandboxes' services, the snapshots' store and the notices of captures done. */
export interface SnapshotServices extends SandboxServices {
  snapshots: SandboxSnapshotStore;
  notices: CaptureNotices;
}

/** Longest a create or a fork waits for the capture; past it, a create answers the snapshot still pending. */
const CAPTURE_WAIT_MS = 60_000;

export interface ForkRequest {
  targetName: string;
  targetType?: 'sandbox' | 'application';
  snapshotId?: string;
  envs?: SandboxEnv[];
  port?: number;
  traffic?: number;
  customDomain?: string;
  prefix?: string;
}

function inputOf(row: SnapshotRow, workspace: WorkspaceGrant, phase: SnapshotLifecycleInput['phase']): SnapshotLifecycleInput {
  return { key: { id: row.id, workspace: workspace.name, workspaceId: workspace.id, name: row.name }, sourceId: row.source_id, nodeQueue: row.node_queue, phase };
}

export async function findSnapshot(services: SnapshotServices, workspace: WorkspaceGrant, nameOrId: string): Promise<SnapshotRow> {
  const row = await services.snapshots.find(workspace.id, nameOrId);
  if (!row) throw notFound(`snapshot '${nameOrId}' not found in workspace '${workspace.name}'`);
  return row;
}

export function listSnapshots(services: SnapshotServices, workspace: WorkspaceGrant, sourceName?: string): Promise<SnapshotRow[]> {
  return services.snapshots.list(workspace.id, sourceName);
}

/**
 * Captures the files of a sandbox (running or in standby) into a new snapshot: inserted pending,
 * its workflow copies the files on the sandbox's node, and this answers once the copy is done
 * (ready or failed), or still pending after CAPTURE_WAIT_MS.
 */
export async function captureSnapshot(services: SnapshotServices, workspace: WorkspaceGrant, request: { name?: string; source: string }, actor: string): Promise<SnapshotRow> {
  const source = await findSandbox(services, workspace, request.source);
  if (source.status !== 'DEPLOYED') throw conflict(`sandbox '${source.name}' is ${source.status}: only a sandbox that runs or stands by can be captured`);
  const name = request.name ?? generatedSnapshotName(source.name, randomBytes(3).toString('hex'));
  const row = await services.snapshots.insert({
    id: randomUUID(),
    workspaceId: workspace.id,
    name,
    sourceId: source.id,
    sourceName: source.name,
    sourceSpec: source.spec as SandboxSpec,
    // Captured where the sandbox runs: its placed node, or the API's for one from before placement.
    nodeQueue: nodeTaskQueue({ taskQueue: services.config.taskQueue, nodeId: source.node_id ?? services.config.nodeId }),
    actor,
  });
  if (!row) throw conflict(`a snapshot named '${name}' already exists in workspace '${workspace.name}'`);
  await startAndAwaitCapture(services, workspace, row);
  return (await services.snapshots.byId(row.id)) ?? row;
}

/**
 * Starts the snapshot's workflow and waits for the capture in one Temporal call (update-with-start
 * of `captured`), or for the node's notice of the outcome when that comes first (it does, by a
 * Temporal round trip); bounded: a long copy leaves the snapshot pending. A start that failed
 * removes the row, which would otherwise stay pending forever.
 */
async function startAndAwaitCapture(services: SnapshotServices, workspace: WorkspaceGrant, row: SnapshotRow): Promise<void> {
  const start = new WithStartWorkflowOperation<typeof snapshotLifecycle>('snapshotLifecycle', {
    taskQueue: services.config.taskQueue,
    workflowId: snapshotWorkflowId(workspace.name, row.id),
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
    args: [inputOf(row, workspace, 'create')],
  });
  const notice = await services.notices.expect(row.id);
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, CAPTURE_WAIT_MS)));
  const captured = services.temporal.workflow.executeUpdateWithStart('captured', { startWorkflowOperation: start });
  // Answered by the notice, the update's own end is of no interest: its failure is no one's.
  captured.catch(() => undefined);
  const started = start.workflowHandle().then(
    () => true,
    () => false,
  );
  try {
    await Promise.race([captured, notice.settled, bound]);
  } catch (err) {
    if (!(await started)) {
      await services.snapshots.delete(row.id);
      throw err;
    }
    if (!(err instanceof WorkflowUpdateRPCTimeoutOrCancelledError)) throw err;
  } finally {
    clearTimeout(timer);
    notice.done();
  }
}

/** Deletes a snapshot: gone from every listing at once; its workflow removes its files from the node. */
export async function deleteSnapshot(services: SnapshotServices, workspace: WorkspaceGrant, nameOrId: string): Promise<SnapshotRow> {
  const row = await findSnapshot(services, workspace, nameOrId);
  await services.snapshots.markDeleting(row.id);
  await deleteThroughWorkflow<typeof snapshotLifecycle>(services.temporal, 'snapshotLifecycle', {
    taskQueue: services.config.taskQueue,
    workflowId: snapshotWorkflowId(workspace.name, row.id),
    input: inputOf(row, workspace, 'delete'),
  });
  return row;
}

/** The reference's fields for a fork into an application, which Hangar does not offer: each a 400 naming it. */
function checkForkTarget(request: ForkRequest): void {
  if (request.targetType === 'application') throw badRequest('body.targetType: forking into an application is not offered; fork into a sandbox');
  for (const field of ['port', 'traffic', 'customDomain', 'prefix'] as const) {
    if (request[field] !== undefined) throw badRequest(`body.${field} applies to a fork into an application, which is not offered`);
  }
}

/**
 * Forks into a new sandbox `targetName` with the files of a snapshot: the one named, or a new
 * capture of `sourceName` as it is now (kept as a snapshot of the workspace, as the reference
 * answers its id). The fork runs the source's image, memory and ports with its envs (and the
 * request's on top), and starts with a copy of the files; the source is untouched.
 */
export async function forkSandbox(services: SnapshotServices, workspace: WorkspaceGrant, sourceName: string | undefined, request: ForkRequest, actor: string) {
  checkForkTarget(request);
  let snapshot: SnapshotRow;
  if (request.snapshotId !== undefined) snapshot = await findSnapshot(services, workspace, request.snapshotId);
  else if (sourceName !== undefined) snapshot = await captureSnapshot(services, workspace, { source: sourceName }, actor);
  else throw badRequest('body.snapshotId is required');
  if (snapshot.status !== 'ready') {
    throw conflict(`snapshot '${snapshot.name}' is ${snapshot.status}${snapshot.message ? `: ${snapshot.message}` : ''}; a fork needs a ready snapshot`);
  }
  const spec = forkSpec(snapshot.source_spec, request.envs ?? []);
  const row: ResourceRow = await createSandbox(services, workspace, { metadata: { name: request.targetName }, spec }, actor, snapshot.id);
  return { name: row.name, snapshotId: snapshot.id, type: 'sandbox' as const };
}

/**
 * Asks the sandbox's lifecycle to put it back to one of its own snapshots (the reference's
 * restore): its files become the snapshot's and its processes start afresh, as a step of its
 * workflow, so it never runs beside a freeze, an update or the deletion. Answers once asked, as
 * the reference does; the sandbox's events say when it is done. Another sandbox's snapshot is
 * not found here, as the reference has it.
 */
export async function restoreSandbox(services: SnapshotServices, workspace: WorkspaceGrant, sandboxName: string, snapshotKey: string) {
  const sandbox = await findSandbox(services, workspace, sandboxName);
  const snapshot = await findSnapshot(services, workspace, snapshotKey);
  if (snapshot.source_id !== sandbox.id) throw notFound(`snapshot '${snapshotKey}' of sandbox '${sandboxName}' not found`);
  if (snapshot.status !== 'ready') throw conflict(`snapshot '${snapshot.name}' is ${snapshot.status}: only a ready snapshot can be restored`);
  if (sandbox.status !== 'DEPLOYED') throw conflict(`sandbox '${sandbox.name}' is ${sandbox.status}: only a sandbox that runs or stands by can be restored`);
  const request: RestoreRequest = { snapshotId: snapshot.id, snapshotName: snapshot.name, restoreId: randomUUID() };
  await services.temporal.workflow
    .getHandle(sandboxWorkflowId(workspace.name, sandbox.name))
    .signal('restore', request)
    .catch((err: unknown) => {
      // Its life ended between the look and the signal: it is going.
      if (err instanceof WorkflowNotFoundError) throw conflict(`sandbox '${sandbox.name}' is being deleted: it cannot be restored`);
      throw err;
    });
  return { name: sandbox.name, snapshotId: snapshot.id };
}
