import { proxyActivities, upsertSearchAttributes, type ActivityOptions } from '@temporalio/workflow';
import type { ImagePullNodeActivities } from '../activities/image-pull-node';
import type { ImagePullInput, NodePullResult } from '../domain/images/image-pull';

export type { ImagePullInput } from '../domain/images/image-pull';

/** How a resource's workflow waits for its pull (awaitImagePull, on the control queue): as long as the pull, alive by its heartbeat. */
export const AWAIT_PULL: ActivityOptions = { startToCloseTimeout: '35m', heartbeatTimeout: '30s', retry: { initialInterval: '1s', maximumInterval: '30s' } };

/**
 * One pull of a registry image onto a node for a workspace (`image-pull/<workspace>/<node>/<reference>`,
 * domain/images/image-pull.ts): its node activity pulls, keeping the workspace's row of the image
 * (progress, READY or FAILED), and answers the digest to whoever waits (activities/image-pull-control.ts).
 * A node worker that dies mid-pull stops heartbeating: the activity runs again on the next.
 */
export async function imagePull(input: ImagePullInput): Promise<NodePullResult> {
  upsertSearchAttributes({ HangarWorkspace: [input.workspace], HangarResourceKind: ['image'], HangarResourceName: [input.request.reference] });
  const node = proxyActivities<ImagePullNodeActivities>({
    taskQueue: input.nodeQueue,
    // As long as the image's download; the heartbeat tells a dead worker apart.
    startToCloseTimeout: '30m',
    heartbeatTimeout: '10s',
    retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 5 },
  });
  return node.pullImageOntoNode(input.request);
}
