import type { Pool } from 'pg';
import { badRequest } from '../../../domain/errors';
import { ImageReferenceError, parseImageReference } from '../../../domain/images/reference';
import { parseWorkspaceImage } from '../../../domain/images/workspace-image';
import type { WorkspaceGrant } from '../../../domain/principal';
import { availableImages, imageExists } from '../../../runtime/image';
import { WorkspaceImageStore } from '../../../store/workspace-images';
import { checkRegistryConnection } from '../sandboxes/registry-connection';

const FIELD = 'body.spec.runtime.image';

/** The image fields of a sandbox's or a workload's `spec.runtime`. */
export interface RuntimeImageSpec {
  runtime?: { image?: string; registryConnection?: string };
}

/**
 * Checks the form of `spec.runtime.image`: a built-in image, a well-formed registry reference
 * (pulled before the start) or a workspace image's `name[:tag]` (checked by checkOwnImage).
 * Every node has the same built-in images: an unknown one is refused here, not left to fail the start.
 */
export function checkImageReference(image: string | undefined): void {
  if (image === undefined || imageExists(image)) return;
  try {
    if (parseImageReference(image).registry !== undefined) return;
  } catch (err) {
    if (err instanceof ImageReferenceError) throw badRequest(`${FIELD}: ${err.message}`);
    throw err;
  }
  if (parseWorkspaceImage(image)) return;
  throw badRequest(`${FIELD}: image '${image}' does not exist; available: ${availableImages().join(', ')}, or an image of a registry named with its host (registry.example.com/team/image:tag)`);
}

/** An image of the workspace (`name[:tag]`) must have been built: READY, or one the resource had before. */
export async function checkOwnImage(images: WorkspaceImageStore, workspace: WorkspaceGrant, image: string | undefined, before?: string): Promise<void> {
  const own = image === undefined || image === before ? undefined : parseWorkspaceImage(image);
  if (!own) return;
  const row = await images.find(workspace.id, own.name, own.tag);
  if (row?.state === 'READY' || (row?.digest ?? null) !== null) return;
  const why = row ? `is ${row.state}${row.reason ? `: ${row.reason}` : ''}` : 'does not exist';
  throw badRequest(`${FIELD}: image '${image}' ${why}; available: ${availableImages().join(', ')}, an image the workspace built (PUT /v0/images/{name}/build), or an image of a registry named with its host (registry.example.com/team/image:tag)`);
}

/** All the checks of `spec.runtime.image` and `spec.runtime.registryConnection`, in the order a sandbox makes them. */
export async function checkRuntimeImage(pg: Pool, workspace: WorkspaceGrant, spec: RuntimeImageSpec, before?: RuntimeImageSpec): Promise<void> {
  checkImageReference(spec.runtime?.image);
  await checkOwnImage(new WorkspaceImageStore(pg), workspace, spec.runtime?.image, before?.runtime?.image);
  await checkRegistryConnection(pg, workspace, spec);
}
