import type { BillingDimension, ResourceType } from '../billing/dimensions';
import type { UsageTick } from '../billing/metering';
import type { WorkloadKey, WorkloadKind } from './workload';

const GB = 1024 ** 3;

/** What a deployed workload costs while it stays as it is. */
export interface WorkloadUsage {
  /** Memory limit of its running process, in MB; 0 when nothing runs (a job between executions). */
  memoryMb: number;
  /** Size of its stored code bundle. */
  bundleBytes: number;
  /** The revision's `spec.runtime.image`: its stored size is billed too (none for `base`, the host's folders). */
  image?: string;
}

export interface WorkloadMeterPeriod extends WorkloadUsage {
  key: WorkloadKey;
  accountId: string;
  /** Stored size of its image: a workspace's build, base-image as a node built it, or a registry pull (store/image-sizes.ts). */
  imageBytes?: number;
  /** Period [from, to), epoch milliseconds. */
  from: number;
  to: number;
}

/** Billing names per kind; models have no dimensions of their own in the contract. Job compute is metered per execution. */
const DIMENSIONS: Record<WorkloadKind, { resourceType: ResourceType; compute?: BillingDimension; storage: BillingDimension } | undefined> = {
  agents: { resourceType: 'agent', compute: 'agent_compute_runtime_gbs', storage: 'agent_image_storage_gbs' },
  functions: { resourceType: 'mcp_server', compute: 'mcp_server_compute_runtime_gbs', storage: 'mcp_server_image_storage_gbs' },
  jobs: { resourceType: 'job', storage: 'job_image_storage_gbs' },
  models: undefined,
};

/** The billed resource type of a workload kind; models have none. */
export function workloadResourceType(kind: WorkloadKind): ResourceType | undefined {
  return DIMENSIONS[kind]?.resourceType;
}

/**
 * Usage of one workload over one period in GB-seconds: compute (its memory limit) while its
 * process runs, and image storage (its bundle plus its image's stored size) while it is stored. Zero quantities are dropped;
 * quantities are rounded so a retried period yields identical ticks.
 */
export function workloadUsageTicks(period: WorkloadMeterPeriod): UsageTick[] {
  const names = DIMENSIONS[period.key.kind];
  const seconds = Math.max(0, (period.to - period.from) / 1000);
  if (!names || seconds === 0) return [];
  const base = {
    accountId: period.accountId,
    workspace: period.key.workspace,
    resourceType: names.resourceType,
    resourceName: period.key.name,
    resourceUuid: period.key.id,
    periodStart: new Date(period.from),
  };
  const ticks: UsageTick[] = [{ ...base, billingDimension: names.storage, quantity: ((period.bundleBytes + (period.imageBytes ?? 0)) / GB) * seconds }];
  if (names.compute) ticks.push({ ...base, billingDimension: names.compute, quantity: (period.memoryMb / 1024) * seconds });
  return ticks.map((tick) => ({ ...tick, quantity: Math.round(tick.quantity * 1e6) / 1e6 })).filter((tick) => tick.quantity > 0);
}
