import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { nodeTaskQueue, type HangarConfig } from '../../../domain/config';
import { badRequest, conflict, notFound } from '../../../domain/errors';
import type { ParsedDockerfile } from '../../../domain/images/dockerfile';
import { imageNameProblem, imageTagProblem, imageWorkflowId, type WorkspaceImageKey, type WorkspaceImageName } from '../../../domain/images/workspace-image';
import type { WorkspaceGrant } from '../../../domain/principal';
import type { WorkspaceImageRow, WorkspaceImageStore } from '../../../store/workspace-images';
import type { ImageBuildInput, imageBuild } from '../../../workflows/image-build';
import { availableImages } from '../../../runtime/image';
import type { StoredContext } from './context-upload';

export interface ImageServices {
  images: WorkspaceImageStore;
  temporal: Client;
  config: HangarConfig;
}

/** The name and tag of a request, each a 400 naming its field when it cannot be an image of the workspace. */
export function checkImageName(name: string, tag = 'latest', tagField = 'params.tag'): WorkspaceImageName {
  if (availableImages().includes(name)) return { name, tag };
  const nameProblem = imageNameProblem(name);
  if (nameProblem) throw badRequest(`params.name: ${nameProblem}`);
  const tagProblem = imageTagProblem(tag);
  if (tagProblem) throw badRequest(`${tagField}: ${tagProblem}`);
  return { name, tag };
}

export function isBuiltinName(name: string): boolean {
  return availableImages().includes(name);
}

/** A FROM naming an image of the workspace must name one it has built. */
async function checkBases(services: ImageServices, workspace: WorkspaceGrant, dockerfile: ParsedDockerfile): Promise<void> {
  for (const base of dockerfile.bases) {
    if (base.kind !== 'workspace') continue;
    const row = await services.images.find(workspace.id, base.image.name, base.image.tag);
    if (!row?.digest) throw badRequest(`body: Dockerfile line ${base.line}: FROM '${base.reference}': the workspace has no built image of that name and tag`, { line: base.line });
  }
}

/**
 * Starts a build of `name:tag` from an uploaded context: the tag is BUILDING at once (a build of
 * it under way is a 409), and its workflow builds on the node and records the outcome.
 */
export async function startImageBuild(services: ImageServices, workspace: WorkspaceGrant, image: WorkspaceImageName, context: StoredContext, actor: string): Promise<WorkspaceImageRow> {
  if (isBuiltinName(image.name)) throw conflict(`image '${image.name}' is built in: it is read-only`);
  await checkBases(services, workspace, context.dockerfile);
  const nodeQueue = nodeTaskQueue(services.config);
  const start = () => services.images.startBuild({ workspaceId: workspace.id, ...image, contextSha256: context.sha256, nodeQueue, actor });
  let row = await start();
  if (!row && (await settleOrphanBuild(services, workspace, image))) row = await start();
  if (!row) throw conflict(`image '${image.name}:${image.tag}' is being built; wait for its build to end`);
  const input: ImageBuildInput = { key: keyOf(workspace, row), nodeQueue, phase: { kind: 'build', build: row.build, contextSha256: context.sha256 } };
  try {
    await services.temporal.workflow.start<typeof imageBuild>('imageBuild', { taskQueue: services.config.taskQueue, workflowId: buildWorkflowId(workspace, row), args: [input] });
  } catch (err) {
    // Without its workflow the tag would stay BUILDING forever.
    await services.images.settle(row.id, row.build, { state: 'FAILED', reason: `the build could not be started: ${(err as Error).message}` });
    throw err;
  }
  return row;
}

function buildWorkflowId(workspace: WorkspaceGrant, row: WorkspaceImageRow): string {
  return `${imageWorkflowId(workspace.name, row)}/${row.id}/${row.build}`;
}

/**
 * How long a tag may be BUILDING without its workflow before it counts as left behind: an upload
 * starts the workflow milliseconds after the record, and one racing it must not take it for dead.
 */
const ORPHAN_AFTER_MS = 60_000;

/**
 * A tag left BUILDING with no workflow running its build (the API died between the two) is
 * settled FAILED, so the next upload can build it; answers whether it was.
 */
async function settleOrphanBuild(services: ImageServices, workspace: WorkspaceGrant, image: WorkspaceImageName): Promise<boolean> {
  const row = await services.images.find(workspace.id, image.name, image.tag);
  if (row?.state !== 'BUILDING' || Date.now() - row.updated_at.getTime() < ORPHAN_AFTER_MS) return false;
  try {
    const description = await services.temporal.workflow.getHandle(buildWorkflowId(workspace, row)).describe();
    if (description.status.name === 'RUNNING') return false;
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  await services.images.settle(row.id, row.build, { state: 'FAILED', reason: 'the build was interrupted before it started' });
  return true;
}

function keyOf(workspace: WorkspaceGrant, row: WorkspaceImageRow): WorkspaceImageKey {
  return { id: row.id, workspace: workspace.name, workspaceId: workspace.id, name: row.name, tag: row.tag };
}

export async function findImageTags(services: ImageServices, workspace: WorkspaceGrant, name: string): Promise<WorkspaceImageRow[]> {
  const rows = await services.images.list(workspace.id, name);
  if (rows.length === 0) throw notFound(`image '${name}' not found in workspace '${workspace.name}'`);
  return rows;
}

export async function findImageTag(services: ImageServices, workspace: WorkspaceGrant, image: WorkspaceImageName): Promise<WorkspaceImageRow> {
  const row = await services.images.find(workspace.id, image.name, image.tag);
  if (!row) throw notFound(`image '${image.name}:${image.tag}' not found in workspace '${workspace.name}'`);
  return row;
}

/**
 * Deletes tags of an image: refused (409, naming them) while a sandbox or workload of the
 * workspace names one of them or one is being built. The records go at once; each tag's workflow
 * removes it from the node's store.
 */
export async function deleteImageTags(services: ImageServices, workspace: WorkspaceGrant, rows: WorkspaceImageRow[]): Promise<void> {
  for (const row of rows) {
    if (row.state === 'BUILDING') throw conflict(`image '${row.name}:${row.tag}' is being built; delete it once its build has ended`);
    const users = await services.images.users(workspace.id, row.name, row.tag);
    if (users.length > 0) throw conflict(`image '${row.name}:${row.tag}' is used by ${users.join(', ')}; delete or move them to another image first`);
  }
  for (const row of rows) {
    await services.images.delete(row.id);
    const input: ImageBuildInput = { key: keyOf(workspace, row), nodeQueue: row.node_queue, phase: { kind: 'delete' } };
    await services.temporal.workflow.start<typeof imageBuild>('imageBuild', {
      taskQueue: services.config.taskQueue,
      workflowId: `${imageWorkflowId(workspace.name, row)}/${row.id}/delete`,
      args: [input],
    });
  }
}
