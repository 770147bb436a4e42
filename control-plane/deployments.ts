import type { Client as TemporalClient } from '@temporalio/client';
import type { Pool } from 'pg';
import { nodeTaskQueue, type HangarConfig } from '../domain/config';
import { boundConnections } from '../domain/integrations/function-binding';
import { isProviderModel } from '../domain/workloads/provider-model';
import { deploymentWorkflowId, type WorkloadKey, type WorkloadKind, type WorkloadSpec } from '../domain/workloads/workload';
import { DEPLOYMENT_WORKFLOW_TYPE, type DeploymentWorkflow } from '../domain/workloads/deployment-start';
import { RevisionStore } from '../store/revisions';

/**
 * Hands a new revision to the workload's deployment workflow, starting the workflow when it is
 * not running (one per workload; a second upload signals the same one).
 */
export async function requestDeployment(temporal: TemporalClient, config: HangarConfig, key: WorkloadKey, revision: number): Promise<void> {
  await temporal.workflow.signalWithStart<DeploymentWorkflow, [number]>(DEPLOYMENT_WORKFLOW_TYPE, {
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
 * Whether a workload deploys from its spec alone: a function bound to an integration connection
 * (the node runs the integration's built-in MCP server) or a provider model (served elsewhere).
 */
export function deploysWithoutBundle(kind: WorkloadKind, spec: WorkloadSpec): boolean {
  return kind === 'functions' ? boundConnections(spec).length > 0 : kind === 'models' && isProviderModel(spec);
}

/**
 * Deploys a workload that needs no bundle: a revision of its spec alone. Anything that creates or
 * changes such a workload (the API, the provisioning saga) calls this; other specs are left
 * alone, as they deploy when their code is uploaded.
 */
export async function deployWithoutBundle(
  services: { pg: Pool; temporal: TemporalClient; config: HangarConfig },
  key: WorkloadKey,
  spec: WorkloadSpec,
  actor: string | null,
): Promise<number | undefined> {
  if (!deploysWithoutBundle(key.kind, spec)) return undefined;
  const revision = await new RevisionStore(services.pg).create({ resourceId: key.id, bundleSha256: null, bundleBytes: null, spec, actor });
  await requestDeployment(services.temporal, services.config, key, revision);
  return revision;
}
