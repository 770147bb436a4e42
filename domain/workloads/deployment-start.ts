import type { WorkloadKey } from './workload';

/**
 * What starts a workload's deployment workflow (workflows/deployment.ts), for code below the
 * workflows that starts or signals it by name (control-plane/deployments.ts).
 */
export interface DeploymentStart {
  key: WorkloadKey;
  nodeQueue: string;
  /** Time without gateway requests after which a revision with `minScale: 0` stops. */
  idleTimeoutMs?: number;
}

/** The workflow's type name in Temporal: the name of its function in workflows/deployment.ts. */
export const DEPLOYMENT_WORKFLOW_TYPE = 'deployment';

/** The workflow's signature as its starters see it. */
export type DeploymentWorkflow = (input: DeploymentStart) => Promise<void>;
