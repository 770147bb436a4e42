import type { Client as TemporalClient } from '@temporalio/client';
import type { Pool } from 'pg';
import { nodeTaskQueue, type HangarConfig } from '../../../core/config';
import { boundConnections } from '../../../core/integrations/function-binding';
import { deploymentWorkflowId, type WorkloadKey, type WorkloadSpec } from '../../../core/workloads/types';
import type { deployment } from '../../../workflows/deployment';
import { RevisionStore } from './revision-store';

/**
 * Hands a new revision to the workload's deployment workflow, starting the workflow when it is
 * not running (one per workload; a second upload signals the same one).
 */
export async function requestDeployment(temporal: TemporalClient, config: HangarConfig, key: WorkloadKey, revision: number): Promise<void> {
  await temporal.workflow.signalWithStart<typeof deployment, [number]>('deployment', {
    taskQueue: config.taskQueue,
    workflowId: deploymentWorkflowId(key.workspace, key.kind, key.name),
    args: [{ key, nodeQueue: nodeTaskQueue(config), idleTimeoutMs: config.workloadIdleSeconds * 1000 }],
    signal: 'revision',
    signalArgs: [revision],
  });
}

/** Tells the workload's deployment workflow, if one runs, that the workload is gone. */
export async function requestRemoval(temporal: TemporalClient, key: Pick<WorkloadKey, 'workspace' | 'kind' | 'name'>): Promise<void> {
  try {
    await temporal.workflow.getHandle(deploymentWorkflowId(key.workspace, key.kind, key.name)).signal('delete');
  } catch (err) {
    // Never deployed, or already finished: nothing runs.
    if ((err as Error).name !== 'WorkflowNotFoundError') throw err;
  }
}

/**
 * Deploys a function bound to an integration connection: a revision without a bundle, which the
 * node runs as the integration's built-in MCP server. Anything that creates or changes such a
 * function (the API, the provisioning saga) calls this; other specs are left alone.
 */
export async function deployIntegrationFunction(
  services: { pg: Pool; temporal: TemporalClient; config: HangarConfig },
  key: WorkloadKey,
  spec: WorkloadSpec,
  actor: string | null,
): Promise<number | undefined> {
  if (key.kind !== 'functions' || boundConnections(spec).length === 0) return undefined;
  const revision = await new RevisionStore(services.pg).create({ resourceId: key.id, bundleSha256: null, bundleBytes: null, spec, actor });
  await requestDeployment(services.temporal, services.config, key, revision);
  return revision;
}
