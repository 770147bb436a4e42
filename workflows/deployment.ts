import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  defineSignal,
  defineUpdate,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { DeploymentControlActivities } from '../activities/deployment-control';
import type { DeploymentNodeActivities, StartRevisionInput } from '../activities/deployment-node';
import type { WorkloadUsage } from '../domain/workloads/metering';
import { isProviderModel } from '../domain/workloads/provider-model';
import {
  DEFAULT_WORKLOAD_MEMORY_MB,
  revisionSandboxId,
  scalesToZero,
  type ProviderServingRevision,
  type RevisionRecord,
  type ServingRevision,
  type WorkloadScaleState,
} from '../domain/workloads/workload';
import type { DeploymentStart } from '../domain/workloads/deployment-start';

export interface DeploymentInput extends DeploymentStart {
  /** Carried over by continue-as-new: the revision serving now and those waiting. */
  serving?: ServingRevision | ProviderServingRevision;
  /** How the serving revision starts again; set only while it may scale to zero. */
  restart?: StartRevisionInput;
  scale?: WorkloadScaleState;
  lastUsedAt?: number;
  pending?: number[];
  /** What is billable now, and up to when it was recorded. */
  usage?: WorkloadUsage;
  meteredUntil?: number;
}

/** A new revision was uploaded (or the spec changed): deploy it. */
export const revisionSignal = defineSignal<[number]>('revision');
/** The workload was deleted: remove what runs. */
export const deleteWorkloadSignal = defineSignal('delete');
/** A gateway served a request (sent throttled, and only for workloads that may scale to zero). */
export const workloadTouchSignal = defineSignal<[number]>('touch');
/**
 * A gateway holds a request for a workload scaled to zero: start it again and answer the socket
 * to forward to. Requests that arrive meanwhile share the one start; a start that fails fails
 * every update waiting on it with the reason.
 */
export const wakeUpdate = defineUpdate<string>('wake');

const MAX_HISTORY_EVENTS = 2_000;
const DEFAULT_IDLE_TIMEOUT_MS = 300_000;
/** Usage is recorded at every change of what runs and at least this often. */
const METER_INTERVAL_MS = 60_000;
/**
 * A run that began before the state history existed replays its recorded steps without the
 * history's writes (Temporal replays a history command by command) and makes them from its next
 * change of usage on.
 */
const STATE_HISTORY_PATCH = 'state-history';
/** Wakes asked for while the workload is being deleted fail instead of answering its socket. */
const REFUSE_WAKES_WHILE_DELETING_PATCH = 'refuse-wakes-while-deleting';

/**
 * One workload's deployments, for its whole life: each new revision goes BUILDING (unpack and
 * check) -> DEPLOYING (start in its own sandbox, wait until it listens) -> DEPLOYED, or FAILED
 * with the reason. The revision serving keeps serving until the next one is healthy, and is
 * removed only then. Revisions uploaded during a deployment collapse into the newest. A provider
 * model's revision runs nothing: DEPLOYING checks its connection, and gateways call its upstream.
 *
 * A revision with `minScale: 0` is removed after `idleTimeoutMs` without gateway touches
 * (SCALED_TO_ZERO, no compute metered) and started again by the `wake` update a gateway sends
 * for the next request; every update waiting meanwhile shares that start and its outcome.
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
  const idleTimeoutMs = input.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  let serving = input.serving;
  let restart = input.restart;
  let scale: WorkloadScaleState = input.scale ?? 'RUNNING';
  let lastUsedAt = input.lastUsedAt ?? Date.now();
  const pending = [...(input.pending ?? [])];
  let deleting = false;
  let usage = input.usage;
  let meteredUntil = input.meteredUntil ?? Date.now();
  // Scale to zero: a stop in progress, a start wanted by a gateway, and the outcome of the last start.
  let stopping = false;
  let wakeWanted = false;
  let wakeAttempts = 0;
  let wakeFailure = '';

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
  setHandler(workloadTouchSignal, (at) => {
    lastUsedAt = Math.max(lastUsedAt, at);
  });
  setHandler(wakeUpdate, async () => {
    // A workload being deleted is not handed out, even while its process still runs: the caller
    // would be sent to a socket about to go (found by the scale-to-zero interleaving test).
    if (deleting && patched(REFUSE_WAKES_WHILE_DELETING_PATCH)) throw startFailure('the workload is being deleted');
    lastUsedAt = Math.max(lastUsedAt, Date.now());
    const running = () => serving !== undefined && scale === 'RUNNING' && !stopping;
    if (!running()) {
      if (!restart) throw startFailure(`the ${key.kind.replace(/s$/, '')} has no revision serving`);
      const attempt = wakeAttempts;
      wakeWanted = true;
      await condition(() => running() || wakeAttempts > attempt || deleting);
      if (!running()) throw startFailure(deleting ? 'the workload is being deleted' : wakeFailure);
    }
    if (!serving || !('socketPath' in serving)) throw startFailure('the revision serving runs no process to start');
    return serving.socketPath;
  });
  upsertSearchAttributes({ HangarWorkspace: [key.workspace], HangarResourceKind: [key.kind], HangarResourceName: [key.name] });

  for (;;) {
    if (workflowInfo().historyLength > MAX_HISTORY_EVENTS && allHandlersFinished()) {
      await continueAsNew<typeof deployment>({ ...input, serving, restart, scale, lastUsedAt, pending, usage, meteredUntil });
    }
    const woken = () => deleting || pending.length > 0 || wakeWanted;
    const idleAt = restart && scale === 'RUNNING' ? lastUsedAt + idleTimeoutMs : Infinity;
    const meterAt = usage ? meteredUntil + METER_INTERVAL_MS : Infinity;
    const due = Math.min(idleAt, meterAt);
    // Nothing billable and nothing to stop: nothing to wake up for but signals and updates.
    const signalled = due === Infinity ? await condition(woken).then(() => true) : await condition(woken, Math.max(1, due - Date.now()));
    if (deleting) break;
    if (wakeWanted) {
      // Before a new revision: requests are held until this start is done.
      await wake();
      continue;
    }
    if (pending.length > 0) {
      const revision = Math.max(...pending.splice(0));
      if (serving && revision <= serving.revision) continue;
      if ((await deploy(revision)) === 'gone') break;
      continue;
    }
    if (signalled) continue;
    // A touch may have moved the idle deadline while we waited: only a deadline still past counts.
    if (restart && scale === 'RUNNING' && Date.now() >= lastUsedAt + idleTimeoutMs) await scaleToZero();
    if (usage && Date.now() >= meteredUntil + METER_INTERVAL_MS) await meter(Date.now());
  }
  const deletedAt = Date.now();
  await meter(deletedAt);
  if (patched(STATE_HISTORY_PATCH)) await control.recordWorkloadState(key, deletedAt, undefined);
  await removeServingSandbox();

  /** Stops the serving revision's process and sandbox; from then on nothing runs and no compute is charged. */
  async function scaleToZero(): Promise<void> {
    if (!serving || !('sandboxId' in serving)) return;
    stopping = true;
    try {
      // Gateways learn first, so a request arriving now asks for a start (held until the stop
      // is done) instead of reaching a process that is about to go.
      await control.markScale(key, 'SCALED_TO_ZERO', { type: 'Normal', message: `revision ${serving.revision}: scaled to zero after ${Math.round(idleTimeoutMs / 1000)} s without requests` });
      await node.removeRevision(serving.sandboxId);
      if (usage) await switchUsage({ ...usage, memoryMb: 0 });
      scale = 'SCALED_TO_ZERO';
    } finally {
      stopping = false;
    }
  }

  /** Starts the serving revision again for the requests waiting; they get the outcome either way. */
  async function wake(): Promise<void> {
    if (!restart || !serving || !('sandboxId' in serving) || scale === 'RUNNING') {
      wakeWanted = false;
      wakeAttempts++;
      return;
    }
    let failure: string | undefined;
    try {
      // Also records the start (event, RUNNING, the gateways' notice): see the activity.
      const socketPath = await node.wakeRevision(restart);
      serving = { ...serving, socketPath };
      scale = 'RUNNING';
      lastUsedAt = Date.now();
    } catch (err) {
      failure = failureReason(err);
      wakeFailure = `revision ${serving.revision} could not start: ${failure}`;
    }
    wakeWanted = false;
    wakeAttempts++;
    if (failure === undefined) {
      // The waiting updates complete with this workflow task; metering follows.
      await switchUsage({ memoryMb: restart.spec.runtime?.memory ?? DEFAULT_WORKLOAD_MEMORY_MB, bundleBytes: usage?.bundleBytes ?? 0 });
    } else {
      // Whatever the failed start left running goes: a workload at zero runs nothing.
      await node.removeRevision(serving.sandboxId);
      await control.markScale(key, 'SCALED_TO_ZERO', { type: 'Warning', message: wakeFailure });
    }
  }

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
      const start: StartRevisionInput = { key, revision, spec: record.spec, appDir, builtin };
      const socketPath = await node.startRevision(start);
      const next = { revision, sandboxId, socketPath };
      const scaling = scalesToZero(record.spec);
      await control.markRevisionDeployed(key, revision, next, scaling ? 'serving; scales to zero when idle' : 'serving', scaling ? 'RUNNING' : null);
      await switchUsage({ memoryMb: record.spec.runtime?.memory ?? DEFAULT_WORKLOAD_MEMORY_MB, bundleBytes: record.bundleBytes });
      await removeServingSandbox();
      serving = next;
      restart = scaling ? start : undefined;
      scale = 'RUNNING';
      lastUsedAt = Date.now();
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
      restart = undefined;
      scale = 'RUNNING';
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
    const at = Date.now();
    await meter(at);
    usage = next;
    if (patched(STATE_HISTORY_PATCH)) await control.recordWorkloadState(key, at, next);
  }
}

/** Fails a wake update (not the workflow): the gateway answers the request with this reason. */
function startFailure(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: 'WorkloadStartError', message, nonRetryable: true });
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
