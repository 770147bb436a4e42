import type { PullProgress } from './pull-progress';
import { canonicalImageReference, parseImageReference } from './reference';

/**
 * The id of the workflow that pulls a registry image onto a node for a workspace: one per
 * workspace, node and reference as it is canonically written (and connection, whose account it
 * pulls with), so every sandbox of the workspace asking for it while it is pulled joins the same
 * pull, and one asking once it is over starts the next (a tag may have moved).
 */
export function imagePullWorkflowId(workspace: string, nodeQueue: string, reference: string, registryConnection?: string): string {
  const canonical = canonicalImageReference(parseImageReference(reference));
  return `image-pull/${workspace}/${nodeQueue}/${canonical}${registryConnection === undefined ? '' : `/${registryConnection}`}`;
}

/** One pull onto a node for a workspace: what the image-pull workflow asks of its node. */
export interface NodePullRequest {
  workspaceId: string;
  reference: string;
  registryConnection?: string;
  /** Who asked first (`slow`, a sandbox's name), for the image's events. */
  requester: string;
}

/** What became of a pull: the digest, and whether it was on the node already. */
export interface NodePullResult {
  digest: string;
  pull: 'PRESENT' | 'PULLED';
  /** A pull's last progress, at 100 % once its total was known (none for an image already on the node). */
  progress?: PullProgress;
}

/** The image-pull workflow's input. */
export interface ImagePullInput {
  /** The workspace's name, for the search attributes; the request holds its id. */
  workspace: string;
  /** The node the image goes onto. */
  nodeQueue: string;
  request: NodePullRequest;
}
