import type { Client } from '@temporalio/client';
import type { Pool } from 'pg';
import { nodeTaskQueue, type HangarConfig } from '../domain/config';
import type { PlatformServices } from '../runtime/platform-services/platform-services';
import type { RuntimeVolumeMount } from '../runtime/sandbox-runtime';
import type { VolumeStore } from '../runtime/volume-store';
import { createAgentRequestNodeActivities } from './agent-request-node';
import { createCallbackActivities, fileFailureRecorder } from './callback';
import { BuiltinWorkloads } from '../runtime/builtin-workloads';
import { createDeploymentNodeActivities } from './deployment-node';
import { createJobNodeActivities } from './job-node';
import { createSandboxNodeActivities, type NodeRuntime } from './sandbox-node';
import { createImageBuildNodeActivities, type ImageBuildRuntime } from './image-build-node';
import { createImagePullNodeActivities } from './image-pull-node';
import { registryAccountsFrom } from './support/registry-accounts';
import { createSnapshotNodeActivities, type SnapshotRuntime } from './snapshot-node';
import { createVolumeNodeActivities } from './volume-node';

export interface NodeActivityDeps {
  config: HangarConfig;
  runtime: NodeRuntime & SnapshotRuntime & ImageBuildRuntime;
  volumes: VolumeStore;
  /** Sandbox starts record their status, job tasks their progress, so a restarted worker resumes them; async agent requests live there. */
  pg: Pool;
  /** The workloads' platform sockets (thread store, egress); the worker restores them at start. */
  platform: PlatformServices;
  /** Asks a workload scaled to zero to start for an async request, and keeps it touched meanwhile. */
  temporal: Client;
  /** Extra folders bound into every job sandbox (tests observe tasks through one). */
  jobMounts?: RuntimeVolumeMount[];
}

/** Every activity a node's runtime worker runs: what touches this machine's sandboxes and volumes. */
export function createNodeActivities({ config, runtime, volumes, pg, platform, temporal, jobMounts }: NodeActivityDeps) {
  return {
    ...createSandboxNodeActivities({ runtime, volumes, pg, registryAccounts: registryAccountsFrom(pg, config), nodeId: config.nodeId, nodeQueue: nodeTaskQueue(config) }),
    ...createImagePullNodeActivities({ runtime, pg, registryAccounts: registryAccountsFrom(pg, config), nodeQueue: nodeTaskQueue(config) }),
    ...createSnapshotNodeActivities({ runtime, pg }),
    ...createImageBuildNodeActivities({ runtime, pg, dataDir: config.dataDir }),
    ...createVolumeNodeActivities({ volumes }),
    ...createDeploymentNodeActivities({ runtime, dataDir: config.dataDir, builtins: new BuiltinWorkloads(config), pg, platform }),
    ...createJobNodeActivities({ runtime, pg, volumes: jobMounts }),
    ...createCallbackActivities({ recordFailure: fileFailureRecorder(config.dataDir) }),
    ...createAgentRequestNodeActivities({ config, pg, temporal }),
  };
}
