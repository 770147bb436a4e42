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
import type { ImagePullControlActivities } from '../activities/image-pull-control';
import type { ResourcePlacementActivities } from '../activities/resource-placement';
import type { SandboxNodeActivities } from '../activities/sandbox-node';
import { isBuiltBaseImage, isRegistryImage } from '../domain/images/builtin';
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
import { DEFAULT_IDLE_TIMEOUT_MS, answersRequests, idleDeadline, isIdle, revisionToDeploy, scaledToZeroMessage, type ServingScale } from '../domain/workloads/scale-to-zero';
import { meterDue, nextMeterAt } from '../domain/billing/meter-schedule';
import { failureReason } from '../domain/failure-reason';
import { AWAIT_PULL } from './image-pull';

export interface DeploymentInput extends DeploymentStart {
  /** Carried over by continue-as-new: the revision serving now and those waiting. */
  serving?: ServingRevision | ProviderServingRevision;
  /** The task queue of the serving revision's node (none: `nodeQueue`, where revisions ran before placement). */
  servingQueue?: string;
  /** The LOST node the serving revision is to be moved off, not acted on yet. */
  lostNode?: string;
  /** The serving revision, at zero, was moved to another node: its code is readied there before it wakes. */
  prepareOnWake?: boolean;
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
/**
 * From the node-loss watch, each pass while it holds: the node `[1]` of revision `[0]` is LOST.
 * If that revision serves, it is moved to another node (a compare-and-set, so however many
 * signals arrive it moves once) and its instance starts there: at once when it runs, on its next
 * wake when it scales to zero. Nothing is asked of the lost node: what ran there is removed by
 * its worker if it comes back (runtime/moved-revision-instances.ts).
 */
export const servingNodeLostSignal = defineSignal<[number, string]>('nodeLost');

const MAX_HISTORY_EVENTS = 2_000;
/**
 * A run that began before the state history existed replays its recorded steps without the
 * history's writes (Temporal replays a history command by command) and makes them from its next
 * change of usage on.
 */
const STATE_HISTORY_PATCH = 'state-history';
/** Wakes asked for while the workload is being deleted fail instead of answering its socket. */
const REFUSE_WAKES_WHILE_DELETING_PATCH = 'refuse-wakes-while-deleting';
/**
 * A new revision takes over before the old one is removed, not after (found by the deployment
 * interleaving test, seed 143270153: a wake during the removal answered the old socket).
 */
const SERVE_NEW_BEFORE_REMOVING_OLD_PATCH = 'serve-new-before-removing-old';
/** A revision on an image of a registry has it pulled onto the node before it starts, as a sandbox does. */
const REGISTRY_IMAGE_PULL_PATCH = 'workload-registry-image-pull';
/** The pull is the workspace's image-pull workflow, shared with whoever asks for the image at once (runs started before pulled with their own activity). */
const PULL_WORKFLOW_PATCH = 'workload-image-pull-workflow';
/** A revision on base-image (the default) waits for its build in the node's prepare step, with heartbeats, rather than in its start's time limit. */
const BASE_IMAGE_PREPARE_PATCH = 'workload-base-image-prepare';

/**
 * Each revision is placed on a node (a control activity, recorded on the revision's row) and its
 * node steps run on that node's queue; before, every step ran on the queue of the API that
 * started the workflow.
 */
export const DEPLOYMENT_PLACEMENT_PATCH = 'deployment-placement';

/** The node activities of one node's queue. */
interface NodeSteps {
  node: ReturnType<typeof proxyActivities<DeploymentNodeActivities>>;
  pulls: ReturnType<typeof proxyActivities<SandboxNodeActivities>>;
}

/** The deployment's node activities on `taskQueue`, with their timeouts. */
function nodeSteps(taskQueue: string): NodeSteps {
  return {
    node: proxyActivities<DeploymentNodeActivities>({
      taskQueue,
      startToCloseTimeout: '6m',
      heartbeatTimeout: '30s',
      retry: { initialInterval: '500ms', maximumInterval: '10s', maximumAttempts: 5 },
    }),
    // The sandbox's pull activity, with its timeouts: a pull moves as many bytes as the image has.
    pulls: proxyActivities<SandboxNodeActivities>({
      taskQueue,
      startToCloseTimeout: '30m',
      heartbeatTimeout: '10s',
      retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 5 },
    }),
  };
}

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
 * When to stop it and when to meter are decided in domain/workloads/scale-to-zero.ts and
 * domain/billing/meter-schedule.ts.
 */
export async function deployment(input: DeploymentInput): Promise<void> {
  const run = new DeploymentRun(input);
  run.listen();
  const { key } = input;
  upsertSearchAttributes({ HangarWorkspace: [key.workspace], HangarResourceKind: [key.kind], HangarResourceName: [key.name] });
  await run.serveUntilDeleted();
  await run.removeAll();
}

/**
 * One run of the deployment workflow: what it knows (carried over by continue-as-new) and its
 * steps. Every step issues its commands (activities, timers) in the order the workflow always
 * has: histories of runs started on earlier code replay on this one.
 */
class DeploymentRun {
  private readonly control = proxyActivities<DeploymentControlActivities & Pick<ResourcePlacementActivities, 'placeRevision' | 'moveRevision'>>({
    startToCloseTimeout: '30s',
    retry: { initialInterval: '200ms', maximumInterval: '10s' },
  });
  private readonly queues = new Map<string, NodeSteps>();
  /** The queue of the serving revision's node. */
  private servingQueue: string;
  private readonly key: DeploymentInput['key'];
  private readonly idleTimeoutMs: number;
  private serving: ServingRevision | ProviderServingRevision | undefined;
  /** How the serving revision starts again; set only while it may scale to zero. */
  private restart: StartRevisionInput | undefined;
  private scale: WorkloadScaleState;
  private lastUsedAt: number;
  private readonly pending: number[];
  private deleting = false;
  private usage: WorkloadUsage | undefined;
  private meteredUntil: number;
  // Scale to zero: a stop in progress, a start wanted by a gateway, and the outcome of the last start.
  private stopping = false;
  private wakeWanted = false;
  private wakeAttempts = 0;
  private wakeFailure = '';
  private lostNode: string | undefined;
  private prepareOnWake: boolean;

  constructor(private readonly input: DeploymentInput) {
    this.servingQueue = input.servingQueue ?? input.nodeQueue;
    this.lostNode = input.lostNode;
    this.prepareOnWake = input.prepareOnWake ?? false;
    this.key = input.key;
    this.idleTimeoutMs = input.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    this.serving = input.serving;
    this.restart = input.restart;
    this.scale = input.scale ?? 'RUNNING';
    this.lastUsedAt = input.lastUsedAt ?? Date.now();
    this.pending = [...(input.pending ?? [])];
    this.usage = input.usage;
    this.meteredUntil = input.meteredUntil ?? Date.now();
  }

  /** The node activities on `queue`. */
  private on(queue: string): NodeSteps {
    let steps = this.queues.get(queue);
    if (!steps) this.queues.set(queue, (steps = nodeSteps(queue)));
    return steps;
  }

  /** The node activities of the serving revision's node. */
  private get node(): NodeSteps['node'] {
    return this.on(this.servingQueue).node;
  }

  listen(): void {
    setHandler(revisionSignal, (revision) => {
      this.pending.push(revision);
    });
    setHandler(deleteWorkloadSignal, () => {
      this.deleting = true;
    });
    setHandler(workloadTouchSignal, (at) => {
      this.lastUsedAt = Math.max(this.lastUsedAt, at);
    });
    setHandler(wakeUpdate, () => this.answerWake());
    setHandler(servingNodeLostSignal, (revision, nodeId) => {
      if (this.serving?.revision === revision) this.lostNode = nodeId;
    });
  }

  /** A gateway's `wake`: the socket of the serving process, started again first if it is at zero. */
  private async answerWake(): Promise<string> {
    // A workload being deleted is not handed out, even while its process still runs: the caller
    // would be sent to a socket about to go (found by the scale-to-zero interleaving test).
    if (this.deleting && patched(REFUSE_WAKES_WHILE_DELETING_PATCH)) throw startFailure('the workload is being deleted');
    this.lastUsedAt = Math.max(this.lastUsedAt, Date.now());
    const running = () => answersRequests({ serving: this.serving !== undefined, scale: this.scale, stopping: this.stopping });
    if (!running()) {
      if (!this.restart) throw startFailure(`the ${this.key.kind.replace(/s$/, '')} has no revision serving`);
      const attempt = this.wakeAttempts;
      this.wakeWanted = true;
      await condition(() => running() || this.wakeAttempts > attempt || this.deleting);
      if (!running()) throw startFailure(this.deleting ? 'the workload is being deleted' : this.wakeFailure);
    }
    if (!this.serving || !('socketPath' in this.serving)) throw startFailure('the revision serving runs no process to start');
    return this.serving.socketPath;
  }

  private servingScale(): ServingScale {
    return { restartable: this.restart !== undefined, scale: this.scale, lastUsedAt: this.lastUsedAt };
  }

  /** Deploys, wakes, scales to zero and meters until the workload is deleted (or its revision is gone). */
  async serveUntilDeleted(): Promise<void> {
    for (;;) {
      if (workflowInfo().historyLength > MAX_HISTORY_EVENTS && allHandlersFinished()) {
        const { serving, servingQueue, lostNode, prepareOnWake, restart, scale, lastUsedAt, pending, usage, meteredUntil } = this;
        await continueAsNew<typeof deployment>({ ...this.input, serving, servingQueue, lostNode, prepareOnWake, restart, scale, lastUsedAt, pending, usage, meteredUntil });
      }
      const signalled = await this.waitForWork();
      if (this.deleting) return;
      if (this.lostNode !== undefined) {
        // Before anything else: the serving revision runs nowhere until it starts on its new node.
        await this.moveServing(this.lostNode);
        continue;
      }
      if (this.wakeWanted) {
        // Before a new revision: requests are held until this start is done.
        await this.wake();
        continue;
      }
      if (this.pending.length > 0) {
        const revision = revisionToDeploy(this.pending.splice(0), this.serving?.revision);
        if (revision === undefined) continue;
        if ((await this.deploy(revision)) === 'gone') return;
        continue;
      }
      if (signalled) continue;
      if (isIdle(this.servingScale(), this.idleTimeoutMs, Date.now())) await this.scaleToZero();
      if (this.usage && meterDue(this.meteredUntil, Date.now())) await this.meter(Date.now());
    }
  }

  /**
   * Waits for a signal or update, or for the next deadline (idle, metering). True when woken by
   * a signal or update rather than a deadline.
   */
  private async waitForWork(): Promise<boolean> {
    const woken = () => this.deleting || this.pending.length > 0 || this.wakeWanted || this.lostNode !== undefined;
    const due = Math.min(idleDeadline(this.servingScale(), this.idleTimeoutMs), nextMeterAt(this.meteredUntil, this.usage !== undefined));
    // Nothing billable and nothing to stop: nothing to wake up for but signals and updates.
    return due === Infinity ? await condition(woken).then(() => true) : await condition(woken, Math.max(1, due - Date.now()));
  }

  /** The workload was deleted: its usage ends now, and what runs goes. */
  async removeAll(): Promise<void> {
    const deletedAt = Date.now();
    await this.meter(deletedAt);
    if (patched(STATE_HISTORY_PATCH)) await this.control.recordWorkloadState(this.key, deletedAt, undefined);
    await this.removeServingSandbox();
  }

  /** Records the current usage up to `until`; the period's start is its id, so retries count once. */
  private async meter(until: number): Promise<void> {
    if (this.usage && until > this.meteredUntil) await this.control.recordWorkloadUsage({ key: this.key, from: this.meteredUntil, to: until, ...this.usage });
    this.meteredUntil = Math.max(this.meteredUntil, until);
  }

  /** Stops the serving revision's process and sandbox; from then on nothing runs and no compute is charged. */
  private async scaleToZero(): Promise<void> {
    const serving = this.serving;
    if (!serving || !('sandboxId' in serving)) return;
    this.stopping = true;
    try {
      // Gateways learn first, so a request arriving now asks for a start (held until the stop
      // is done) instead of reaching a process that is about to go.
      await this.control.markScale(this.key, 'SCALED_TO_ZERO', { type: 'Normal', message: scaledToZeroMessage(serving.revision, this.idleTimeoutMs) });
      await this.node.removeRevision(serving.sandboxId);
      if (this.usage) await this.switchUsage({ ...this.usage, memoryMb: 0 });
      this.scale = 'SCALED_TO_ZERO';
    } finally {
      this.stopping = false;
    }
  }

  /** Starts the serving revision again for the requests waiting; they get the outcome either way. */
  private async wake(): Promise<void> {
    const { restart, serving } = this;
    if (!restart || !serving || !('sandboxId' in serving) || this.scale === 'RUNNING') {
      this.wakeWanted = false;
      this.wakeAttempts++;
      return;
    }
    let failure: string | undefined;
    try {
      const start = this.prepareOnWake ? await this.prepareAgain(restart) : restart;
      // Also records the start (event, RUNNING, the gateways' notice): see the activity.
      const socketPath = await this.node.wakeRevision(start);
      this.serving = { ...serving, socketPath };
      this.scale = 'RUNNING';
      this.lastUsedAt = Date.now();
    } catch (err) {
      failure = failureReason(err);
      this.wakeFailure = `revision ${serving.revision} could not start: ${failure}`;
    }
    this.wakeWanted = false;
    this.wakeAttempts++;
    if (failure === undefined) {
      // The waiting updates complete with this workflow task; metering follows.
      await this.switchUsage({ memoryMb: restart.spec.runtime?.memory ?? DEFAULT_WORKLOAD_MEMORY_MB, bundleBytes: this.usage?.bundleBytes ?? 0, image: restart.spec.runtime?.image });
    } else {
      // Whatever the failed start left running goes: a workload at zero runs nothing.
      await this.node.removeRevision(serving.sandboxId);
      await this.control.markScale(this.key, 'SCALED_TO_ZERO', { type: 'Warning', message: this.wakeFailure });
    }
  }

  /**
   * The serving revision's node `lostNode` is LOST: the revision is moved to another node. One
   * that scales to zero is at zero from then on and is started there by its next wake; any other
   * starts there now, its code readied there first. The lost node is asked nothing.
   */
  private async moveServing(lostNode: string): Promise<void> {
    this.lostNode = undefined;
    const serving = this.serving;
    if (!serving || !('sandboxId' in serving)) return;
    const { key, control } = this;
    const { nodeQueue: queue } = await control.moveRevision({ resourceId: key.id, revision: serving.revision, fromNodeId: lostNode });
    if (queue === this.servingQueue) return;
    this.servingQueue = queue;
    const message = `revision ${serving.revision}: its node was lost; moved to another node`;
    if (this.restart) {
      this.prepareOnWake = true;
      if (this.scale === 'RUNNING') {
        this.scale = 'SCALED_TO_ZERO';
        await control.markScale(key, 'SCALED_TO_ZERO', { type: 'Warning', message: `${message}, where the next request starts it` });
        if (this.usage) await this.switchUsage({ ...this.usage, memoryMb: 0 });
      }
      return;
    }
    const record = await control.loadRevision(key, serving.revision);
    if (!record) return;
    try {
      const start = await this.prepareOn(queue, record);
      const socketPath = await this.on(queue).node.startRevision(start);
      this.serving = { ...serving, socketPath };
      await control.markRevisionDeployed(key, serving.revision, this.serving, `${message}, serving there`);
    } catch (err) {
      await this.on(queue).node.removeRevision(serving.sandboxId);
      await control.markRevisionFailed(key, serving.revision, `${message}, where it could not start: ${failureReason(err)}`, undefined);
    }
  }

  /**
   * The revision's code readied on the node of `queue`: its bundle unpacked, or the built-in code
   * of a workload without one (an integration's MCP server) resolved; its image pulled. How it starts there.
   */
  private async prepareOn(queue: string, record: RevisionRecord): Promise<StartRevisionInput> {
    const { node } = this.on(queue);
    const builtin = !record.bundleSha256;
    const appDir = record.bundleSha256 ? await node.unpackBundle(record.bundleSha256, record.spec) : await node.prepareBuiltin(this.key, record.spec);
    await this.pullImage(record, queue);
    return { key: this.key, revision: record.revision, spec: record.spec, appDir, builtin };
  }

  /** A revision at zero moved to another node: its code readied there before it starts again. */
  private async prepareAgain(restart: StartRevisionInput): Promise<StartRevisionInput> {
    const record = await this.control.loadRevision(this.key, restart.revision);
    if (!record) throw startFailure('the revision no longer exists');
    this.restart = await this.prepareOn(this.servingQueue, record);
    this.prepareOnWake = false;
    return this.restart;
  }

  private async deploy(revision: number): Promise<'done' | 'gone'> {
    const { key, control } = this;
    const record = await control.loadRevision(key, revision);
    if (!record) return 'gone';
    if (key.kind === 'models' && isProviderModel(record.spec)) return this.deployProvider(record);
    const sandboxId = revisionSandboxId(key.id, revision);
    const queue = await this.placeRevision(revision);
    try {
      await control.markRevisionProgress(key, revision, 'BUILDING', 'unpacking and checking the code bundle');
      const start = await this.prepareOn(queue, record);
      if (key.kind === 'jobs') {
        // Jobs run per execution; deploying one means its code is ready.
        await control.markRevisionDeployed(key, revision, { revision, codeDir: start.appDir }, 'code ready for executions');
        await this.switchUsage({ memoryMb: 0, bundleBytes: record.bundleBytes, image: record.spec.runtime?.image });
        return 'done';
      }
      await this.startProcess(record, start, sandboxId, queue);
    } catch (err) {
      await this.on(queue).node.removeRevision(sandboxId);
      await control.markRevisionFailed(key, revision, failureReason(err), this.serving?.revision);
    }
    return 'done';
  }

  /**
   * The queue of the node `revision` runs on. A job's revisions are not placed: deploying one
   * readies its code where the API is, and each execution is placed by itself.
   */
  private async placeRevision(revision: number): Promise<string> {
    if (this.key.kind === 'jobs' || !patched(DEPLOYMENT_PLACEMENT_PATCH)) return this.input.nodeQueue;
    return (await this.control.placeRevision({ resourceId: this.key.id, revision })).nodeQueue;
  }

  /**
   * The revision's image of a registry onto its node (progress in the workload's events), or
   * base-image found or built there, before anything starts on it. The platform's own code (no
   * bundle) runs on the host's folders whatever its spec says.
   */
  private async pullImage(record: RevisionRecord, queue: string): Promise<void> {
    const image = record.spec.runtime?.image;
    if (image !== undefined && isBuiltBaseImage(image) && record.bundleSha256 && patched(BASE_IMAGE_PREPARE_PATCH)) {
      await this.on(queue).pulls.prepareBaseImage(this.key);
      return;
    }
    if (image === undefined || !isRegistryImage(image) || !patched(REGISTRY_IMAGE_PULL_PATCH)) return;
    const { registryConnection } = record.spec.runtime ?? {};
    const spec = { runtime: { image, ...(registryConnection === undefined ? {} : { registryConnection }) } };
    // The pull runs on the revision's node, the one placement chose.
    if (patched(PULL_WORKFLOW_PATCH)) await proxyActivities<ImagePullControlActivities>(AWAIT_PULL).awaitImagePull(this.key, spec, queue);
    else await this.on(queue).pulls.pullSandboxImage(this.key, spec);
  }

  /** DEPLOYING: the revision's process starts in its sandbox and takes over from the one serving. */
  private async startProcess(record: RevisionRecord, start: StartRevisionInput, sandboxId: string, queue: string): Promise<void> {
    const { key, control } = this;
    const { revision } = start;
    await control.markRevisionProgress(key, revision, 'DEPLOYING', 'starting the command and waiting for it to listen');
    const socketPath = await this.on(queue).node.startRevision(start);
    const next = { revision, sandboxId, socketPath };
    const scaling = scalesToZero(record.spec);
    await control.markRevisionDeployed(key, revision, next, scaling ? 'serving; scales to zero when idle' : 'serving', scaling ? 'RUNNING' : null);
    await this.switchUsage({ memoryMb: record.spec.runtime?.memory ?? DEFAULT_WORKLOAD_MEMORY_MB, bundleBytes: record.bundleBytes, image: record.spec.runtime?.image });
    if (patched(SERVE_NEW_BEFORE_REMOVING_OLD_PATCH)) {
      // The new revision serves before the old one goes: a wake answered while the old one is
      // being removed would send its request to a socket about to disappear.
      const previous = this.serving;
      const previousNode = this.node;
      this.serving = next;
      this.servingQueue = queue;
      if (previous && 'sandboxId' in previous) await previousNode.removeRevision(previous.sandboxId);
    } else {
      await this.removeServingSandbox();
      this.serving = next;
      this.servingQueue = queue;
    }
    this.restart = scaling ? start : undefined;
    this.scale = 'RUNNING';
    this.lastUsedAt = Date.now();
  }

  private async deployProvider({ revision, spec }: RevisionRecord): Promise<'done'> {
    const { key, control } = this;
    try {
      await control.markRevisionProgress(key, revision, 'DEPLOYING', 'checking the provider connection');
      const provider = await control.checkProviderModel(key, spec);
      await control.markRevisionDeployed(key, revision, { revision, provider }, `serving through ${provider.endpoint} as model '${provider.model}'`);
      // Nothing runs, so nothing is billable (the contract has no model dimensions).
      await this.switchUsage(undefined);
      await this.removeServingSandbox();
      this.serving = { revision, provider };
      this.restart = undefined;
      this.scale = 'RUNNING';
    } catch (err) {
      await control.markRevisionFailed(key, revision, failureReason(err), this.serving?.revision);
    }
    return 'done';
  }

  /** The sandbox of the revision serving, if one runs (a provider model's does not). */
  private async removeServingSandbox(): Promise<void> {
    if (this.serving && 'sandboxId' in this.serving) await this.node.removeRevision(this.serving.sandboxId);
  }

  /** What was billable is recorded up to now; from now on, `next` is. */
  private async switchUsage(next: WorkloadUsage | undefined): Promise<void> {
    const at = Date.now();
    await this.meter(at);
    this.usage = next;
    if (patched(STATE_HISTORY_PATCH)) await this.control.recordWorkloadState(this.key, at, next);
  }
}

/** Fails a wake update (not the workflow): the gateway answers the request with this reason. */
function startFailure(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: 'WorkloadStartError', message, nonRetryable: true });
}
