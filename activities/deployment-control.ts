import { ApplicationFailure } from '@temporalio/activity';
import type { Pool } from 'pg';
import { ApiError } from '../domain/errors';
import { validateModelSpec } from '../control-plane/connection-bindings';
import { ResourceStore } from '../store/resources';
import { RevisionStore } from '../store/revisions';
import type { ResourceStatus } from '../domain/resource';
import { workloadResourceType, workloadUsageTicks, type WorkloadMeterPeriod, type WorkloadUsage } from '../domain/workloads/metering';
import { providerTarget, type ProviderTarget } from '../domain/workloads/provider-model';
import {
  type ProviderServingRevision,
  type RevisionRecord,
  type ServingRevision,
  type WorkloadKey,
  type WorkloadScaleState,
  type WorkloadSpec,
} from '../domain/workloads/workload';
import { StateHistory } from '../store/state-history';
import { storedImageBytes, workloadNode } from '../store/image-sizes';
import { recordWorkspaceUsage } from './usage-metering';

/** The control-plane side of deployments: the resource's status and revisions, its state history and usage. */
export function createDeploymentControlActivities({ pg }: { pg: Pool }) {
  return { ...revisionStatusActivities(pg), ...workloadUsageActivities(pg) };
}

/** The revisions' progress, and the resource's status and events the gateways route by. */
function revisionStatusActivities(pg: Pool) {
  const resources = new ResourceStore(pg);
  const revisions = new RevisionStore(pg);

  return {
    /** The revision to deploy, or undefined when the workload was deleted meanwhile. */
    async loadRevision(key: WorkloadKey, revision: number): Promise<RevisionRecord | undefined> {
      return revisions.get(key.id, revision);
    },

    async markRevisionProgress(key: WorkloadKey, revision: number, status: Extract<ResourceStatus, 'BUILDING' | 'DEPLOYING'>, message: string): Promise<void> {
      await revisions.setStatus(key.id, revision, status, message);
      await resources.transition(key.id, status, { type: 'Normal', message: `revision ${revision}: ${message}` });
    },

    /**
     * The revision serves now: the gateway routes to it from here on. `scale` is set for a
     * revision that may scale to zero (null otherwise), so the gateway knows to wake it.
     */
    async markRevisionDeployed(
      key: WorkloadKey,
      revision: number,
      serving: ServingRevision | ProviderServingRevision | { revision: number; codeDir: string },
      message: string,
      scale: WorkloadScaleState | null = null,
    ): Promise<void> {
      await revisions.setStatus(key.id, revision, 'DEPLOYED', message);
      // The transition tells the gateways (ResourceStore announces every change).
      await resources.transition(key.id, 'DEPLOYED', { type: 'Normal', message: `revision ${revision}: ${message}` }, { serving, scale });
    },

    /** The serving revision stopped for being idle, or could not start again: an event, and the gateways' route. */
    async markScale(key: WorkloadKey, scale: WorkloadScaleState, event: { type: 'Normal' | 'Warning'; message: string }): Promise<void> {
      await resources.note(key.id, event, { scale });
    },

    /**
     * Checks a provider model's revision as the API would (its connection may have gone since),
     * without opening its secrets; answers where it sends requests.
     */
    async checkProviderModel(key: WorkloadKey, spec: WorkloadSpec): Promise<ProviderTarget> {
      try {
        await validateModelSpec({ pg }, { id: key.workspaceId, name: key.workspace }, spec);
      } catch (err) {
        if (err instanceof ApiError && err.statusCode < 500) throw ApplicationFailure.nonRetryable(err.message, 'WorkloadDeployError');
        throw err;
      }
      return providerTarget(spec, key.name);
    },

    /**
     * The revision failed. With an older revision still serving, the workload stays DEPLOYED
     * (on the old code) and the warning says why the new one did not take over.
     */
    async markRevisionFailed(key: WorkloadKey, revision: number, reason: string, stillServing: number | undefined): Promise<void> {
      await revisions.setStatus(key.id, revision, 'FAILED', reason);
      const message = `revision ${revision} failed: ${reason}`;
      if (stillServing === undefined) await resources.transition(key.id, 'FAILED', { type: 'Warning', message });
      else await resources.transition(key.id, 'DEPLOYED', { type: 'Warning', message: `${message}; revision ${stillServing} keeps serving` });
    },
  };
}

/** What the workload is billed as: its state history, and the usage of each metered period. */
function workloadUsageActivities(pg: Pool) {
  const history = new StateHistory(pg);

  /** The stored size of the workload's image on the node it runs on (store/image-sizes.ts); 0 for `base`. */
  async function imageBytes(key: WorkloadKey, image: string | undefined): Promise<number> {
    return storedImageBytes(pg, { workspaceId: key.workspaceId, image, node: () => workloadNode(pg, key.id) });
  }

  return {

    /**
     * The workload's state history: from `at` on it is billed as `usage` (a process of that
     * memory running or not, its bundle stored), or no longer at all (deleted, or a provider model).
     */
    async recordWorkloadState(key: WorkloadKey, at: number, usage: WorkloadUsage | undefined): Promise<void> {
      const resourceType = workloadResourceType(key.kind);
      if (!resourceType || !usage) {
        await history.end(key.id, at);
        return;
      }
      const facts = { state: usage.memoryMb > 0 ? 'RUNNING' : 'STOPPED', memoryMb: usage.memoryMb, storedBytes: usage.bundleBytes + (await imageBytes(key, usage.image)) };
      await history.enter({ workspaceId: key.workspaceId, resourceType, resourceUuid: key.id, resourceName: key.name }, facts, at);
    },

    /** Idempotent: a retried period produces the same event ids and is counted once. */
    async recordWorkloadUsage(period: Omit<WorkloadMeterPeriod, 'accountId' | 'imageBytes'>): Promise<void> {
      const stored = await imageBytes(period.key, period.image);
      await recordWorkspaceUsage(pg, period.key.workspaceId, (accountId) => workloadUsageTicks({ ...period, imageBytes: stored, accountId }));
    },
  };
}

export type DeploymentControlActivities = ReturnType<typeof createDeploymentControlActivities>;
