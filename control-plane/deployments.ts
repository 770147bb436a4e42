import type { Client as TemporalClient } from '@temporalio/client';
import type { Pool } from 'pg';
import { nodeTaskQueue, type HangarConfig } from '../domain/config';
import { deploysWithoutBundle } from '../domain/workloads/platform-code';
import { deploymentWorkflowId, type WorkloadKey, type WorkloadSpec } from '../domain/workloads/workload';
import { DEPLOYMENT_WORKFLOW_TYPE, type DeploymentWorkflow } from '../domain/workloads/deployment-start';
import { networkChanged } from '../domain/sandbox/spec-rules';
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

/**
 * A PUT that changes a workload's `spec.network` deploys a new revision of the same code with the
 * spec as it now is: an instance's network namespace is made at its start, so the change reaches
 * the instances by replacing them (the previous revision serves until the new one is healthy).
 * Jobs need none: each execution reads the job's current spec. Workloads deploying without a
 * bundle already get a revision per change (deployWithoutBundle); one never uploaded waits for
 * its first upload, which carries the spec.
 */
export async function redeployForNetworkChange(
  services: { pg: Pool; temporal: TemporalClient; config: HangarConfig },
  key: WorkloadKey,
  spec: WorkloadSpec,
  actor: string | null,
): Promise<number | undefined> {
  if (key.kind === 'jobs' || deploysWithoutBundle(key.kind, spec)) return undefined;
  // Compared and written under the resource's lock, with the spec as it is then: of two updates
  // at once (or an update and an upload), the last revision has the last spec.
  const revision = await new RevisionStore(services.pg).createFromLatestBundle(key.id, actor, (latest, current) => networkChanged(latest.spec, current));
  if (revision !== undefined) await requestDeployment(services.temporal, services.config, key, revision);
  return revision;
}
