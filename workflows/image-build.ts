import { proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { ImageBuildNodeActivities } from '../activities/image-build-node';
import type { ImageControlActivities } from '../activities/image-control';
import { failureReason } from '../domain/failure-reason';
import type { WorkspaceImageKey } from '../domain/images/workspace-image';

export interface ImageBuildInput {
  key: WorkspaceImageKey;
  /** The node whose store holds (or will hold) the image. */
  nodeQueue: string;
  /** A build (its number and uploaded context), or the removal of the tag from the node. */
  phase: { kind: 'build'; build: number; contextSha256: string } | { kind: 'delete' };
}

/**
 * One operation on a workspace's image tag: a build from its uploaded context on the node, its
 * outcome (READY with the digest, or FAILED with the reason) recorded on the image; or the tag's
 * removal from the node's store after its record is gone. Every step is an activity, so a worker
 * killed mid-way resumes here; a build interrupted by a node worker's death is run again whole
 * (its finished steps come from buildah's cache).
 */
export async function imageBuild(input: ImageBuildInput): Promise<void> {
  const { key } = input;
  upsertSearchAttributes({ HangarWorkspace: [key.workspace], HangarResourceKind: ['image'], HangarResourceName: [`${key.name}:${key.tag}`] });
  const control = proxyActivities<ImageControlActivities>({ startToCloseTimeout: '30s', retry: { initialInterval: '200ms', maximumInterval: '10s' } });
  const node = proxyActivities<ImageBuildNodeActivities>({
    taskQueue: input.nodeQueue,
    // A build takes as long as its RUN steps; the heartbeat tells a dead worker apart.
    startToCloseTimeout: '2h',
    heartbeatTimeout: '10s',
    retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 5 },
  });
  if (input.phase.kind === 'delete') {
    await node.removeWorkspaceImage(key);
    return;
  }
  const { build, contextSha256 } = input.phase;
  try {
    const built = await node.buildWorkspaceImage(key, contextSha256);
    await control.settleImageBuild(key.id, build, { state: 'READY', ...built });
  } catch (err) {
    await control.settleImageBuild(key.id, build, { state: 'FAILED', reason: failureReason(err) });
  }
}
