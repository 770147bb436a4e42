import { createAgentRequestControlActivities } from './agent-request-control';
import { createCustomDomainControlActivities } from './custom-domain-control';
import { createDeploymentControlActivities } from './deployment-control';
import type { ActivityDeps } from './support/activity-deps';
import { createJobControlActivities } from './job-control';
import { createNodeLossActivities } from './node-loss';
import { createNodePlacementActivities } from './node-placement';
import { createResourcePlacementActivities } from './resource-placement';
import { createProvisioningActivities } from './provisioning';
import { createSandboxControlActivities } from './sandbox-control';
import { createImageControlActivities } from './image-control';
import { createImagePullControlActivities } from './image-pull-control';
import { createSnapshotControlActivities } from './snapshot-control';
import { createVolumeControlActivities } from './volume-control';
import { createUsageActivities } from './usage-flush';

export type { ActivityDeps } from './support/activity-deps';

/** Every activity the control worker runs, built from the services of its process. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createSandboxControlActivities(deps),
    ...createSnapshotControlActivities(deps),
    ...createImageControlActivities(deps),
    ...createImagePullControlActivities(deps),
    ...createDeploymentControlActivities(deps),
    ...createProvisioningActivities(deps),
    ...createJobControlActivities(deps),
    ...createNodePlacementActivities(deps),
    ...createResourcePlacementActivities(deps),
    ...createNodeLossActivities(deps),
    ...createVolumeControlActivities(deps),
    ...createCustomDomainControlActivities(deps),
    ...createUsageActivities(deps),
    ...createAgentRequestControlActivities(deps),
  };
}
