import { NAME_PATTERN } from '../names';
import { isBuiltinImage } from './builtin';

/** Where an image of a workspace is in its life; FAILED carries the reason beside it. */
export type ImageState = 'PULLING' | 'BUILDING' | 'READY' | 'FAILED';

/** An image a workspace built, as `spec.runtime.image` names it: `name[:tag]`, no registry, no namespace. */
export interface WorkspaceImageName {
  name: string;
  tag: string;
}

/** The tag a name without one means, as every container tool does. */
export const DEFAULT_TAG = 'latest';
const NAME = new RegExp(NAME_PATTERN);
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/** Why a name cannot be an image of the workspace, or undefined when it can. */
export function imageNameProblem(name: string): string | undefined {
  if (!NAME.test(name) || name.endsWith('-')) return `'${name}' must be lowercase letters, digits and '-', starting with a letter and not ending with '-', at most 49 characters`;
  if (isBuiltinImage(name)) return `'${name}' is a built-in image's name`;
  return undefined;
}

/** Why a tag is refused (the distribution grammar's), or undefined. */
export function imageTagProblem(tag: string): string | undefined {
  return TAG.test(tag) ? undefined : `the tag '${tag}' must be 1-128 letters, digits, '_', '.' or '-', not starting with '.' or '-'`;
}

/**
 * The workspace image a reference names: one path component and an optional tag, no registry,
 * no digest, and not a built-in name. Undefined for anything else (a built-in image, a reference
 * naming a registry, or a name that cannot be an image of a workspace).
 */
export function parseWorkspaceImage(reference: string): WorkspaceImageName | undefined {
  if (reference.includes('/') || reference.includes('@') || isBuiltinImage(reference)) return undefined;
  const [name, tag = DEFAULT_TAG, ...rest] = reference.split(':');
  if (rest.length > 0 || imageNameProblem(name) !== undefined || imageTagProblem(tag) !== undefined) return undefined;
  return { name, tag };
}

/**
 * The key under which the node's image store records a workspace's image: the workspace's id
 * keeps two workspaces' `app:1` apart, and no registry reference can take this form (it has no
 * host), so a pull never lands on it.
 */
export function workspaceImageKey(workspaceId: string, image: WorkspaceImageName): string {
  return `workspace:${workspaceId}/${image.name}:${image.tag}`;
}

/** One workflow per image tag: its builds, one after the other, and its deletion. */
export function imageWorkflowId(workspace: string, image: WorkspaceImageName): string {
  return `image/${workspace}/${image.name}:${image.tag}`;
}

/** What a workflow about a workspace's image tag carries: the record's id, the workspace, the tag. */
export interface WorkspaceImageKey extends WorkspaceImageName {
  /** The record's uuid (store/workspace-images.ts). */
  id: string;
  workspace: string;
  workspaceId: string;
}
