import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { ImagePullControlActivities } from '../activities/image-pull-control';
import type { ResourcePlacementActivities } from '../activities/resource-placement';
import type { SandboxControlActivities } from '../activities/sandbox-control';
import type { RestoreRequest, SandboxNodeActivities } from '../activities/sandbox-node';
import { failureReason } from '../domain/failure-reason';
import { UNRECORDED_IMAGE, isBuiltBaseImage, isRegistryImage } from '../domain/images/builtin';
import { AWAIT_PULL } from './image-pull';
import { nextExpiry } from '../domain/sandbox/expiry';
import { knownGeneration, lastChangeAt, noteObserved, noteThaw, sandboxState, usagePeriods, type StandbyLedger } from '../domain/sandbox/lifecycle';
import { idlePeriodOver, nextSandboxStep } from '../domain/sandbox/next-step';
import { envsChanged, networkChanged } from '../domain/sandbox/spec-rules';
import { DEFAULT_SANDBOX_MEMORY_MB, NODE_LOST_SIGNAL, type SandboxKey, type SandboxSpec, type SandboxState } from '../domain/sandbox/sandbox';

export interface SandboxLifecycleInput {
  key: SandboxKey;
  spec: SandboxSpec;
  nodeQueue: string;
  idleTimeoutMs: number;
  createdAt: number;
  /** Where a run starts: a new sandbox, one carried over by continue-as-new, or a cleanup. */
  phase: 'create' | 'running' | 'delete';
  /** Written by runs before freeze generations; a carried-over `ledger` supersedes it. */
  state?: SandboxState;
  lastUsedAt?: number;
  /** Usage is recorded up to here (continue-as-new carries it over). */
  meteredUntil?: number;
  /** The node's freezes and thaws known so far (continue-as-new carries it over). */
  ledger?: StandbyLedger;
  /** A fork: the snapshot whose files the sandbox starts with. */
  seedSnapshotId?: string;
  /** A network policy the node has not taken yet (continue-as-new carries it over). */
  networkPending?: boolean;
}

/** A request reached the sandbox (sent by the gateway, throttled). */
export const touchSignal = defineSignal<[number]>('touch');
/**
 * The gateway thawed a sandbox in standby to serve a request: when (node clock) and the freeze
 * generation the sandbox runs in since. A gateway older than generations sends no generation.
 */
export const resumedSignal = defineSignal<[number, number?]>('resumed');
export const deleteSignal = defineSignal('delete');
/** The user changed lifetime rules (ttl, expiration policies). */
export const specSignal = defineSignal<[SandboxSpec]>('spec');
/** Put the sandbox back to one of its snapshots (its files; processes start afresh). */
export const restoreSignal = defineSignal<[RestoreRequest]>('restore');
/**
 * The sandbox's node is LOST (sent by the node loss watch, which marked it FAILED): its last
 * heartbeat, epoch ms. Nothing more is asked of that node; usage ends at the heartbeat.
 */
export const nodeLostSignal = defineSignal<[number]>(NODE_LOST_SIGNAL);
export const stateQuery = defineQuery<{ state: SandboxState; lastUsedAt: number }>('state');

// Signals from busy sandboxes add history; start afresh well before Temporal's limits.
const MAX_HISTORY_EVENTS = 5_000;
/** Sandboxes on images from a registry pull them before their start (runs started before did not). */
const IMAGE_PULL_PATCH = 'sandbox-image-pull';
/** Sandboxes on base-image wait for the node to build it, saying so, before their start (runs started before did not). */
const BASE_IMAGE_PATCH = 'sandbox-base-image-build';
/** The pull is the image-pull workflow of the workspace, node and reference, which sandboxes asking at once share (runs started before ran it as their own activity). */
const PULL_WORKFLOW_PATCH = 'sandbox-image-pull-workflow';
/** A network policy is pushed until the node takes it, with events while it has not (runs started before gave up after the retries). */
const NETWORK_UNTIL_APPLIED_PATCH = 'sandbox-network-until-applied';
/** Restores to a snapshot run as a step of the lifecycle (runs started before had no such step). */
const RESTORE_PATCH = 'sandbox-restore';
/** A new sandbox is placed on a node by its workflow (runs started before ran on the API's node). */
export const SANDBOX_PLACEMENT_PATCH = 'sandbox-placement';

/**
 * One sandbox's life: start it on its node, keep it RUNNING while used, freeze it into STANDBY
 * after the idle period, note resumes, and delete it when asked or when a ttl or expiration
 * policy says so. Every step is an activity, so a worker killed at any point resumes here.
 *
 * The state it reports is the node's: freezes and thaws are compared by the node's freeze
 * generation (domain/sandbox/lifecycle.ts), and usage is split at the node's moments of change
 * (start, freeze, thaw, stop), each period in the state the node had. What it does next is
 * decided in domain/sandbox/next-step.ts.
 */
export async function sandboxLifecycle(input: SandboxLifecycleInput): Promise<void> {
  const run = new SandboxRun(input);
  run.listen();
  const { key } = input;
  upsertSearchAttributes({ HangarWorkspace: [key.workspace], HangarResourceKind: ['sandbox'], HangarResourceName: [key.name] });
  // A failed sandbox stays visible (with its reason) until deleted.
  const why = await run.unlessNodeLost(async () => {
    if (input.phase === 'create' && !(await run.start())) return 'deleted by request';
    return run.watchUntilGone();
  });
  return run.cleanUp(why === NODE_LOST ? 'its node was lost' : why);
}

type Measured = Awaited<ReturnType<SandboxNodeActivities['measureSandbox']>>;

/** What steps cut short by the loss of their node answer. */
const NODE_LOST = Symbol('node lost');

/**
 * One run of the sandbox lifecycle workflow: what it knows (carried over by continue-as-new) and
 * its steps. Every step issues its commands (activities, timers) in the order the workflow
 * always has: histories of runs started on earlier code replay on this one.
 */
class SandboxRun {
  private readonly control = proxyActivities<SandboxControlActivities & ResourcePlacementActivities>({
    startToCloseTimeout: '30s',
    retry: { initialInterval: '200ms', maximumInterval: '10s' },
  });
  private node!: ReturnType<typeof proxyActivities<SandboxNodeActivities>>;
  private pulls!: ReturnType<typeof proxyActivities<SandboxNodeActivities>>;
  private readonly pullWaits = proxyActivities<ImagePullControlActivities>(AWAIT_PULL);
  private policyPush!: ReturnType<typeof proxyActivities<SandboxNodeActivities>>;
  /** The queue of the sandbox's node: the API's before placement, then the one placement chose. */
  private nodeQueue: string;
  /** The last heartbeat of its node, once the node is LOST; the scope its steps run in, cancelled then. */
  private nodeLostAt?: number;
  private nodeSteps?: CancellationScope;
  /** Set while a placed sandbox has no node yet: its placement was refused, nothing of it is on any node. */
  private unplaced = false;
  private readonly key: SandboxKey;
  private spec: SandboxSpec;
  private ledger: StandbyLedger;
  private lastUsedAt: number;
  private deleting: boolean;
  private woken = false;
  // Set when the node must be asked: someone saw the sandbox running while we hold it frozen.
  private askNode = false;
  // Set when an update changed the envs: the node gives them to the running sandbox.
  private envsToApply = false;
  // Set when an update changed the network policy: the node applies it from the next connection on.
  private networkToApply = false;
  // Set when a restore to a snapshot was asked for; the latest request wins.
  private restoreTo?: RestoreRequest;
  // Metering: usage is recorded per period in the state the node had during it.
  private meteredUntil: number;
  private metering: boolean;

  constructor(private readonly input: SandboxLifecycleInput) {
    this.nodeQueue = input.nodeQueue;
    this.useNode(input.nodeQueue);
    this.key = input.key;
    this.networkToApply = input.networkPending ?? false;
    this.spec = input.spec;
    this.ledger = input.ledger ?? legacyLedger(input);
    this.lastUsedAt = input.lastUsedAt ?? input.createdAt;
    this.deleting = input.phase === 'delete';
    this.meteredUntil = input.meteredUntil ?? Date.now();
    this.metering = input.phase === 'running';
  }

  /** Sends the node's steps to `queue`. */
  private useNode(queue: string): void {
    this.nodeQueue = queue;
    this.node = proxyActivities<SandboxNodeActivities>({
      taskQueue: queue,
      startToCloseTimeout: '60s',
      // Start and stop beat every second: a worker that dies mid-way is noticed within seconds.
      heartbeatTimeout: '5s',
      retry: { initialInterval: '200ms', maximumInterval: '10s', maximumAttempts: 10 },
    });
    // A pull moves as many bytes as the image has: more time than a start, the same heartbeats.
    this.pulls = proxyActivities<SandboxNodeActivities>({
      taskQueue: queue,
      startToCloseTimeout: '30m',
      heartbeatTimeout: '10s',
      retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 5 },
    });
    // A node that has not taken a policy within seconds is down or stuck: say so, then keep trying.
    this.policyPush = proxyActivities<SandboxNodeActivities>({
      taskQueue: queue,
      scheduleToStartTimeout: '10s',
      startToCloseTimeout: '30s',
      retry: { initialInterval: '200ms', maximumInterval: '5s', maximumAttempts: 3 },
    });
  }

  private state(): SandboxState {
    return sandboxState(this.ledger);
  }

  listen(): void {
    setHandler(deleteSignal, () => {
      this.deleting = true;
    });
    setHandler(touchSignal, (at) => {
      this.lastUsedAt = Math.max(this.lastUsedAt, at);
      if (this.state() === 'STANDBY') this.askNode = true;
      this.woken = true;
    });
    setHandler(resumedSignal, (at, generation) => {
      this.lastUsedAt = Math.max(this.lastUsedAt, at);
      if (generation === undefined || generation === null) this.askNode = true;
      else this.ledger = noteThaw(this.ledger, { generation, at });
      this.woken = true;
    });
    setHandler(specSignal, (next) => {
      if (envsChanged(this.spec, next)) this.envsToApply = true;
      if (networkChanged(this.spec, next)) this.networkToApply = true;
      this.spec = next;
      this.woken = true;
    });
    setHandler(restoreSignal, (request) => {
      this.restoreTo = request;
      this.woken = true;
    });
    setHandler(nodeLostSignal, (lastHeartbeatAt) => {
      this.nodeLostAt ??= lastHeartbeatAt;
      this.nodeSteps?.cancel();
    });
    setHandler(stateQuery, () => ({ state: this.state(), lastUsedAt: this.lastUsedAt }));
  }

  /** Starts the sandbox (also marks it DEPLOYED, see the activity); false when it failed and was then deleted. */
  async start(): Promise<boolean> {
    let started: { startedAt: number };
    try {
      if (patched(SANDBOX_PLACEMENT_PATCH)) {
        this.unplaced = true;
        await this.place();
        this.unplaced = false;
      }
      const image = this.spec.runtime?.image;
      if (image !== undefined && isRegistryImage(image) && patched(IMAGE_PULL_PATCH)) {
        // The pull runs on the sandbox's node, the one placement chose.
        if (patched(PULL_WORKFLOW_PATCH)) await this.pullWaits.awaitImagePull(this.key, this.spec, this.nodeQueue);
        else await this.pulls.pullSandboxImage(this.key, this.spec);
      }
      if (image !== undefined && isBuiltBaseImage(image) && patched(BASE_IMAGE_PATCH)) await this.pulls.prepareBaseImage(this.key);
      started = await this.node.startSandbox(this.key, this.spec, this.input.seedSnapshotId);
    } catch (err) {
      if (this.nodeLostAt !== undefined) throw err;
      // The node's own reason (its image, files or a spec it cannot use), not Temporal's wrapper around it.
      await this.control.markSandboxFailed(this.key, `failed to start: ${failureReason(err)}`);
      await condition(() => this.deleting);
      return false;
    }
    this.meteredUntil = started.startedAt;
    this.metering = true;
    return true;
  }

  /**
   * The node this sandbox runs on, chosen by the control plane (by free memory in its region, or
   * its volumes' or snapshot's node) and recorded on its row: a retry answers the same node.
   */
  private async place(): Promise<void> {
    const { key, spec } = this;
    const volumes = (spec.volumes ?? []).flatMap((volume) => (volume.volumeId ? [{ name: volume.name, volumeId: volume.volumeId }] : []));
    const request = { resourceId: key.id, region: spec.region, volumes, seedSnapshotId: this.input.seedSnapshotId, legacyQueue: this.input.nodeQueue };
    this.useNode((await this.control.placeSandbox(request)).nodeQueue);
  }

  /**
   * Runs `steps` (the sandbox's life, or its removal) unless its node is LOST: then those waiting
   * on that node are cancelled (a dead node's queue would hold them for ever) and NODE_LOST is
   * the answer. Runs that never hear of a loss issue the commands they always did.
   */
  async unlessNodeLost<T>(steps: () => Promise<T>): Promise<T | typeof NODE_LOST> {
    if (this.nodeLostAt !== undefined) return NODE_LOST;
    try {
      return await CancellationScope.cancellable(async () => {
        this.nodeSteps = CancellationScope.current();
        return steps();
      });
    } catch (err) {
      if (this.nodeLostAt === undefined || !isCancellation(err)) throw err;
      return NODE_LOST;
    } finally {
      this.nodeSteps = undefined;
    }
  }

  /**
   * A sandbox of a LOST node: the watch marked it FAILED and ended its state history at the
   * node's last heartbeat. Its compute is metered up to there (its frozen memory and disk of
   * that stretch are not: the node cannot be asked), it stays visible until deleted, and its
   * record goes then without the node: the node removes the sandbox itself if it comes back.
   */
  private async cleanUpLost(lostAt: number, removing: boolean): Promise<void> {
    if (this.metering && lostAt > this.meteredUntil) await this.meter(lostAt, { memoryBytes: 0, imageBytes: 0 });
    // One lost while it was being removed goes on going; one lost while it ran waits for its delete.
    if (!removing) {
      await condition(() => this.deleting);
      await this.control.markSandboxDeleting(this.key, 'deleted by request (its node was lost)');
    }
    await this.control.deleteSandboxRecord(this.key, lostAt);
  }

  /** Keeps the books and freezes when idle, until the sandbox is deleted or expires; answers why it goes. */
  async watchUntilGone(): Promise<string> {
    let persistedState: SandboxState | undefined = this.input.phase === 'running' ? this.state() : 'RUNNING';
    while (!this.deleting) {
      if (this.envsToApply) await this.applyEnvs();
      if (this.networkToApply) await this.applyNetwork();
      if (this.restoreTo && !(await this.restore(this.restoreTo))) return this.waitForDeletion();
      const expiry = nextExpiry({
        ttl: this.spec.runtime?.ttl,
        expires: this.spec.runtime?.expires,
        policies: this.spec.lifecycle?.expirationPolicies ?? [],
        createdAt: this.input.createdAt,
        lastUsedAt: this.lastUsedAt,
      });
      const { ledger, askNode, meteredUntil, lastUsedAt } = this;
      const next = nextSandboxStep({ ledger, askNode, meteredUntil, persistedState, lastUsedAt, idleTimeoutMs: this.input.idleTimeoutMs, expiry }, Date.now());
      if (next.do === 'observe-node') await this.observeNode();
      else if (next.do === 'meter') await this.meter(next.until);
      else if (next.do === 'meter-to-node-word') await this.meter(await this.observeNode());
      else if (next.do === 'persist-state') {
        persistedState = next.state;
        await this.control.setSandboxState(this.key, persistedState, this.lastUsedAt);
      } else if (next.do === 'expire') return next.reason;
      else await this.waitThenFreezeWhenIdle(next);
    }
    return 'deleted by request';
  }

  /**
   * Hands updated envs to the running sandbox, frozen or not (no other step changes for it). A
   * node that cannot, after its retries, leaves them for the sandbox's next start, which takes
   * them from the spec: the sandbox's life does not end over its environment.
   */
  private async applyEnvs(): Promise<void> {
    this.envsToApply = false;
    await this.node.updateSandboxEnvs(this.key, this.spec).catch(() => undefined);
  }

  /**
   * Hands an updated network policy to the node. Runs started before the patch did it as envs
   * are (given up after the retries); now it is pushed until the node takes it: a policy the user
   * was told is accepted must not be lost to a node worker that was down.
   */
  private async applyNetwork(): Promise<void> {
    this.networkToApply = false;
    if (!patched(NETWORK_UNTIL_APPLIED_PATCH)) {
      await this.node.updateSandboxNetwork(this.key, this.spec).catch(() => undefined);
      return;
    }
    await this.pushNetworkUntilApplied();
  }

  /**
   * Pushes the newest policy to the node until it takes it or the sandbox goes, with a Warning
   * event on the sandbox while it has not (and a Normal one once it has). A policy the node
   * refuses for good (its sandbox gone, `internet` changed) ends it with a Warning saying why.
   */
  private async pushNetworkUntilApplied(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.policyPush.updateSandboxNetwork(this.key, this.spec);
        if (attempt > 1) await this.control.noteSandboxEvent(this.key, 'Normal', 'network policy applied on the node');
        return;
      } catch (err) {
        if (refusedForGood(err)) return this.control.noteSandboxEvent(this.key, 'Warning', `network policy not applied: ${failureReason(err)}`);
        if (attempt === 1) await this.control.noteSandboxEvent(this.key, 'Warning', `network policy not applied yet: the node has not taken it (${failureReason(err)}); retrying until it does`);
      }
      if (await condition(() => this.deleting, networkRetryDelayMs(attempt))) return;
      if (workflowInfo().historyLength > MAX_HISTORY_EVENTS) {
        const { spec, lastUsedAt, meteredUntil, ledger } = this;
        await continueAsNew<typeof sandboxLifecycle>({ ...this.input, nodeQueue: this.nodeQueue, spec, phase: 'running', state: this.state(), lastUsedAt, meteredUntil, ledger, networkPending: true });
      }
    }
  }

  /**
   * Puts the sandbox back to a snapshot, as a step of its life: nothing else (a freeze, a
   * deletion, an update) runs on the node meanwhile. Usage is recorded up to the restore first,
   * in the state and size it had; the node's freeze state after is taken in (a frozen sandbox
   * comes back running). False when the sandbox could not be started again: it is FAILED.
   */
  private async restore(request: RestoreRequest): Promise<boolean> {
    this.restoreTo = undefined;
    if (!patched(RESTORE_PATCH)) return true;
    if (this.metering) await this.meter(await this.observeNode());
    try {
      const seen = await this.node.restoreSandbox(this.key, request);
      this.ledger = noteObserved(this.ledger, seen);
      if (seen.restored) this.lastUsedAt = Math.max(this.lastUsedAt, seen.observedAt);
      return true;
    } catch (err) {
      // It runs no more: its usage ends here, before its state history does.
      await this.meter(Date.now());
      this.metering = false;
      await this.control.markSandboxRestoreFailed(this.key, `restore to snapshot '${request.snapshotName}' failed: ${failureReason(err)}`);
      return false;
    }
  }

  /** A sandbox that failed stays visible with its reason until deleted. */
  private async waitForDeletion(): Promise<string> {
    await condition(() => this.deleting);
    return 'deleted by request';
  }

  /** Waits for a signal or the next deadline; a RUNNING sandbox idle by then is frozen (if the node agrees). */
  private async waitThenFreezeWhenIdle({ ms, freezeWhenIdle }: { ms: number; freezeWhenIdle: boolean }): Promise<void> {
    if (workflowInfo().historyLength > MAX_HISTORY_EVENTS) {
      const { spec, lastUsedAt, meteredUntil, ledger } = this;
      await continueAsNew<typeof sandboxLifecycle>({ ...this.input, nodeQueue: this.nodeQueue, spec, phase: 'running', state: this.state(), lastUsedAt, meteredUntil, ledger });
    }
    this.woken = false;
    if (await condition(() => this.deleting || this.woken, ms)) return;
    if (!freezeWhenIdle || !idlePeriodOver(this.lastUsedAt, this.input.idleTimeoutMs, Date.now())) return;
    // The node checks the sandbox itself: a request in flight or a foreground command keeps it up.
    const standby = await this.node.enterStandby(this.key, this.input.idleTimeoutMs, knownGeneration(this.ledger));
    this.lastUsedAt = Math.max(this.lastUsedAt, standby.lastUsedAt);
    // A `resumed` heard meanwhile carries a later generation and keeps the state RUNNING.
    this.ledger = noteObserved(this.ledger, standby.freeze);
  }

  /**
   * Records usage from meteredUntil to `until`, split where the node froze or thawed; ids follow
   * the period, so retries count once. `measured` is given when the sandbox is about to go.
   */
  private async meter(until: number, measured?: Measured): Promise<void> {
    if (until <= this.meteredUntil) return;
    const { key, spec } = this;
    const now = measured ?? (await this.node.measureSandbox(key, spec.runtime?.image ?? UNRECORDED_IMAGE));
    for (const period of usagePeriods(this.ledger, this.meteredUntil, until)) {
      await this.control.recordSandboxUsage({
        key,
        ...period,
        memoryMb: spec.runtime?.memory ?? DEFAULT_SANDBOX_MEMORY_MB,
        frozenBytes: now.memoryBytes,
        diskBytes: now.imageBytes,
      });
    }
    this.meteredUntil = until;
  }

  /**
   * Asks the node how the sandbox stands. A frozen sandbox is only known to stay frozen up to
   * the moment the node said so: a thaw later than that is still to be heard of.
   */
  private async observeNode(): Promise<number> {
    this.askNode = false;
    const seen = await this.node.freezeState(this.key);
    this.ledger = noteObserved(this.ledger, seen);
    return seen.observedAt;
  }

  /** The sandbox goes: from its node, or without it when the node is (or gets) LOST or it was never placed. */
  async cleanUp(why: string): Promise<void> {
    const { key, control } = this;
    if (this.nodeLostAt !== undefined) return this.cleanUpLost(this.nodeLostAt, false);
    await control.markSandboxDeleting(key, why);
    if (this.unplaced) return control.deleteSandboxRecord(key);
    if ((await this.unlessNodeLost(() => this.removeFromNode())) === NODE_LOST) return this.cleanUpLost(this.nodeLostAt!, true);
  }

  private async removeFromNode(): Promise<void> {
    const { key, control } = this;
    // What it holds is measured while it still exists; usage ends where the node removed it.
    const measured = this.metering ? await this.node.measureSandbox(key, this.spec.runtime?.image ?? UNRECORDED_IMAGE) : undefined;
    const stopped = await this.node.stopSandbox(key);
    if (!measured) return control.deleteSandboxRecord(key);
    if (stopped.freeze) this.ledger = noteObserved(this.ledger, stopped.freeze);
    if (lastChangeAt(this.ledger) > this.meteredUntil) await this.meter(lastChangeAt(this.ledger), measured);
    await this.meter(stopped.stoppedAt, measured);
    await control.deleteSandboxRecord(key, stopped.stoppedAt);
  }
}

/** Whether the node answered that it cannot take the policy at all (not that it was not reached). */
function refusedForGood(err: unknown): boolean {
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.nonRetryable === true;
}

/** Between pushes of a policy the node has not taken: 2 s doubling to 30 s. */
function networkRetryDelayMs(attempt: number): number {
  return Math.min(1_000 * 2 ** Math.min(attempt, 5), 30_000);
}

/**
 * A run carried over from before generations knew only a state. Its node has no generation
 * recorded either, and counts its first freeze found as generation 0: a standby is that freeze.
 */
function legacyLedger(input: SandboxLifecycleInput): StandbyLedger {
  return input.state === 'STANDBY' ? { frozen: { generation: 0, at: input.meteredUntil ?? 0 } } : {};
}
