import { condition, continueAsNew, defineSignal, proxyActivities, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { DeploymentControlActivities } from '../activities/deployment-control';
import type { DeploymentNodeActivities } from '../activities/deployment-node';
import type { WorkloadUsage } from '../core/workloads/metering';
import { isProviderModel } from '../core/workloads/provider-model';
import {
  DEFAULT_WORKLOAD_MEMORY_MB,
  revisionSandboxId,
  type ProviderServingRevision,
  type RevisionRecord,
  type ServingRevision,
  type WorkloadKey,
} from '../core/workloads/types';

export interface DeploymentInput {
  key: WorkloadKey;
  nodeQueue: string;
  /** Carried over by continue-as-new: the revision serving now and those waiting. */
  serving?: ServingRevision | ProviderServingRevision;
  pending?: number[];
  /** What is billable now, and up to when it was recorded. */
  usage?: WorkloadUsage;
  meteredUntil?: number;
}

/** A new revision was uploaded (or the spec changed): deploy it. */
export const revisionSignal = defineSignal<[number]>('revision');
/** The workload was deleted: remove what runs. */
export const deleteWorkloadSignal = defineSignal('delete');

const MAX_HISTORY_EVENTS = 2_000;
/** Usage is recorded at every change of what runs and at least this often. */
const METER_INTERVAL_MS = 60_000;

/**
 * One workload's deployments, for its whole life: each new revision goes BUILDING (unpack and
 * check) -> DEPLOYING (start in its own sandbox, wait until it listens) -> DEPLOYED, or FAILED
 * with the reason. The revision serving keeps serving until the next one is healthy, and is
 * removed only then. Revisions uploaded during a deployment collapse into the newest. A provider
 * model's revision runs nothing: DEPLOYING checks its connection, and gateways call its upstream.
 */
export async function deployment(input: DeploymentInput): Promise<void> {
  const control = proxyActivities<DeploymentControlActivities>({
    startToCloseTimeout: '30s',
    retry: { initialInterval: '200ms', maximumInterval: '10s' },
  });
  const node = proxyActivities<DeploymentNodeActivities>({
    taskQueue: input.nodeQueue,
    startToCloseTimeout: '6m',
    heartbeatTimeout: '30s',
    retry: { initialInterval: '500ms', maximumInterval: '10s', maximumAttempts: 5 },
  });
  const { key } = input;
  let serving = input.serving;
  const pending = [...(input.pending ?? [])];
  let deleting = false;
  let usage = input.usage;
  let meteredUntil = input.meteredUntil ?? Date.now();

  /** Records the current usage up to `until`; the period's start is its id, so retries count once. */
  async function meter(until: number): Promise<void> {
    if (usage && until > meteredUntil) await control.recordWorkloadUsage({ key, from: meteredUntil, to: until, ...usage });
    meteredUntil = Math.max(meteredUntil, until);
  }

  setHandler(revisionSignal, (revision) => {
    pending.push(revision);
  });
  setHandler(deleteWorkloadSignal, () => {
    deleting = true;
  });
  upsertSearchAttributes({ HangarWorkspace: [key.workspace], HangarResourceKind: [key.kind], HangarResourceName: [key.name] });

  for (;;) {
    if (workflowInfo().historyLength > MAX_HISTORY_EVENTS) {
      await continueAsNew<typeof deployment>({ ...input, serving, pending, usage, meteredUntil });
    }
    const woken = () => deleting || pending.length > 0;
    if (usage) {
      if (!(await condition(woken, Math.max(1, meteredUntil + METER_INTERVAL_MS - Date.now())))) {
        await meter(Date.now());
        continue;
      }
    } else {
      // Nothing billable: nothing to wake up for but signals.
      await condition(woken);
    }
    if (deleting) break;
    const revision = Math.max(...pending.splice(0));
    if (serving && revision <= serving.revision) continue;
    if ((await deploy(revision)) === 'gone') break;
  }
  await meter(Date.now());
  await removeServingSandbox();

  async function deploy(revision: number): Promise<'done' | 'gone'> {
    const record = await control.loadRevision(key, revision);
    if (!record) return 'gone';
    if (key.kind === 'models' && isProviderModel(record.spec)) return deployProvider(record);
    const sandboxId = revisionSandboxId(key.id, revision);
    try {
      await control.markRevisionProgress(key, revision, 'BUILDING', 'unpacking and checking the code bundle');
      // A workload without a bundle runs built-in code (an integration's MCP server), resolved on the node.
      const builtin = !record.bundleSha256;
      const appDir = record.bundleSha256 ? await node.unpackBundle(record.bundleSha256, record.spec) : await node.prepareBuiltin(key, record.spec);
      if (key.kind === 'jobs') {
        // Jobs run per execution; deploying one means its code is ready.
        await control.markRevisionDeployed(key, revision, { revision, codeDir: appDir }, 'code ready for executions');
        await switchUsage({ memoryMb: 0, bundleBytes: record.bundleBytes });
        return 'done';
      }
      await control.markRevisionProgress(key, revision, 'DEPLOYING', 'starting the command and waiting for it to listen');
      const socketPath = await node.startRevision({ key, revision, spec: record.spec, appDir, builtin });
      const next = { revision, sandboxId, socketPath };
      await control.markRevisionDeployed(key, revision, next, 'serving');
      await switchUsage({ memoryMb: record.spec.runtime?.memory ?? DEFAULT_WORKLOAD_MEMORY_MB, bundleBytes: record.bundleBytes });
      await removeServingSandbox();
      serving = next;
    } catch (err) {
      await node.removeRevision(sandboxId);
      await control.markRevisionFailed(key, revision, failureReason(err), serving?.revision);
    }
    return 'done';
  }

  async function deployProvider({ revision, spec }: RevisionRecord): Promise<'done'> {
    try {
      await control.markRevisionProgress(key, revision, 'DEPLOYING', 'checking the provider connection');
      const provider = await control.checkProviderModel(key, spec);
      await control.markRevisionDeployed(key, revision, { revision, provider }, `serving through ${provider.endpoint} as model '${provider.model}'`);
      // Nothing runs, so nothing is billable (the contract has no model dimensions).
      await switchUsage(undefined);
      await removeServingSandbox();
      serving = { revision, provider };
    } catch (err) {
      await control.markRevisionFailed(key, revision, failureReason(err), serving?.revision);
    }
    return 'done';
  }

  /** The sandbox of the revision serving, if one runs (a provider model's does not). */
  async function removeServingSandbox(): Promise<void> {
    if (serving && 'sandboxId' in serving) await node.removeRevision(serving.sandboxId);
  }

  /** What was billable is recorded up to now; from now on, `next` is. */
  async function switchUsage(next: WorkloadUsage | undefined): Promise<void> {
    await meter(Date.now());
    usage = next;
  }
}

/** The innermost message of an activity failure: the reason the user should read. */
function failureReason(err: unknown): string {
  let current = err as { message?: string; cause?: unknown } | undefined;
  let message = current?.message ?? String(err);
  while (current?.cause) {
    current = current.cause as { message?: string; cause?: unknown };
    if (current.message) message = current.message;
  }
  return message;
}
