import {
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { SandboxControlActivities } from '../activities/sandbox-control';
import type { SandboxNodeActivities } from '../activities/sandbox-node';
import { nextExpiry } from '../domain/sandbox/expiry';
import { knownGeneration, lastChangeAt, noteObserved, noteThaw, sandboxState, usagePeriods, type StandbyLedger } from '../domain/sandbox/lifecycle';
import { DEFAULT_SANDBOX_IMAGE, DEFAULT_SANDBOX_MEMORY_MB, type SandboxKey, type SandboxSpec, type SandboxState } from '../domain/sandbox/sandbox';

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
export const stateQuery = defineQuery<{ state: SandboxState; lastUsedAt: number }>('state');

// Signals from busy sandboxes add history; start afresh well before Temporal's limits.
const MAX_HISTORY_EVENTS = 5_000;
/** Usage is recorded at every state change and at least this often. */
const METER_INTERVAL_MS = 60_000;
/**
 * The shortest wait: a deadline closer than this is checked this much later, which idle periods
 * and ttls counted in seconds do not notice. A timer of a few ms mostly fires while the workflow
 * task that would cancel it (a touch arrived) is still running, which costs a task for nothing
 * and which Temporal's Java test server cannot even process (temporalio/sdk-java#2606).
 */
const MIN_WAIT_MS = 1_000;

/**
 * One sandbox's life: start it on its node, keep it RUNNING while used, freeze it into STANDBY
 * after the idle period, note resumes, and delete it when asked or when a ttl or expiration
 * policy says so. Every step is an activity, so a worker killed at any point resumes here.
 *
 * The state it reports is the node's: freezes and thaws are compared by the node's freeze
 * generation (domain/sandbox/lifecycle.ts), and usage is split at the node's moments of change
 * (start, freeze, thaw, stop), each period in the state the node had.
 */
export async function sandboxLifecycle(input: SandboxLifecycleInput): Promise<void> {
  const control = proxyActivities<SandboxControlActivities>({
    startToCloseTimeout: '30s',
    retry: { initialInterval: '200ms', maximumInterval: '10s' },
  });
  const node = proxyActivities<SandboxNodeActivities>({
    taskQueue: input.nodeQueue,
    startToCloseTimeout: '60s',
    // Start and stop beat every second: a worker that dies mid-way is noticed within seconds.
    heartbeatTimeout: '5s',
    retry: { initialInterval: '200ms', maximumInterval: '10s', maximumAttempts: 10 },
  });
  const { key } = input;
  let spec = input.spec;
  let ledger: StandbyLedger = input.ledger ?? legacyLedger(input);
  let lastUsedAt = input.lastUsedAt ?? input.createdAt;
  let deleting = input.phase === 'delete';
  let woken = false;
  // Set when the node must be asked: someone saw the sandbox running while we hold it frozen.
  let askNode = false;
  // Metering: usage is recorded per period in the state the node had during it.
  let meteredUntil = input.meteredUntil ?? Date.now();
  let metering = input.phase === 'running';
  const state = () => sandboxState(ledger);

  setHandler(deleteSignal, () => {
    deleting = true;
  });
  setHandler(touchSignal, (at) => {
    lastUsedAt = Math.max(lastUsedAt, at);
    if (state() === 'STANDBY') askNode = true;
    woken = true;
  });
  setHandler(resumedSignal, (at, generation) => {
    lastUsedAt = Math.max(lastUsedAt, at);
    if (generation === undefined || generation === null) askNode = true;
    else ledger = noteThaw(ledger, { generation, at });
    woken = true;
  });
  setHandler(specSignal, (next) => {
    spec = next;
    woken = true;
  });
  setHandler(stateQuery, () => ({ state: state(), lastUsedAt }));

  upsertSearchAttributes({ HangarWorkspace: [key.workspace], HangarResourceKind: ['sandbox'], HangarResourceName: [key.name] });

  let reason = 'deleted by request';
  if (input.phase === 'create') {
    let started: { startedAt: number };
    try {
      // Also marks it DEPLOYED (see the activity).
      started = await node.startSandbox(key, spec);
    } catch (err) {
      await control.markSandboxFailed(key, `failed to start: ${(err as Error).message}`);
      // A failed sandbox stays visible (with its reason) until deleted.
      await condition(() => deleting);
      return cleanUp(reason);
    }
    meteredUntil = started.startedAt;
    metering = true;
  }

  type Measured = Awaited<ReturnType<SandboxNodeActivities['measureSandbox']>>;

  /**
   * Records usage from meteredUntil to `until`, split where the node froze or thawed; ids follow
   * the period, so retries count once. `measured` is given when the sandbox is about to go.
   */
  async function meter(until: number, measured?: Measured): Promise<void> {
    if (until <= meteredUntil) return;
    const now = measured ?? (await node.measureSandbox(key, spec.runtime?.image ?? DEFAULT_SANDBOX_IMAGE));
    for (const period of usagePeriods(ledger, meteredUntil, until)) {
      await control.recordSandboxUsage({
        key,
        ...period,
        memoryMb: spec.runtime?.memory ?? DEFAULT_SANDBOX_MEMORY_MB,
        frozenBytes: now.memoryBytes,
        diskBytes: now.imageBytes,
      });
    }
    meteredUntil = until;
  }

  /**
   * Asks the node how the sandbox stands. A frozen sandbox is only known to stay frozen up to
   * the moment the node said so: a thaw later than that is still to be heard of.
   */
  async function observeNode(): Promise<number> {
    askNode = false;
    const seen = await node.freezeState(key);
    ledger = noteObserved(ledger, seen);
    return seen.observedAt;
  }

  let persistedState: SandboxState | undefined = input.phase === 'running' ? state() : 'RUNNING';
  while (!deleting) {
    // Book-keeping first, one step a pass: signals handled during any await are seen by the next
    // pass, so nothing learnt during a step is left unrecorded when the loop goes on to wait or
    // to freeze (a new freeze replaces the ledger's last one, which must be metered by then).
    if (askNode) {
      await observeNode();
      continue;
    }
    if (lastChangeAt(ledger) > meteredUntil) {
      // Every change is recorded as soon as it is known, so a period never spans two.
      await meter(lastChangeAt(ledger));
      continue;
    }
    if (Date.now() - meteredUntil >= METER_INTERVAL_MS) {
      // Running is certain up to now (only this workflow freezes it); standby only up to the node's word.
      await meter(state() === 'RUNNING' ? Date.now() : await observeNode());
      continue;
    }
    if (persistedState !== state()) {
      persistedState = state();
      await control.setSandboxState(key, persistedState, lastUsedAt);
      continue;
    }
    const expiry = nextExpiry({
      ttl: spec.runtime?.ttl,
      policies: spec.lifecycle?.expirationPolicies ?? [],
      createdAt: input.createdAt,
      lastUsedAt,
    });
    const now = Date.now();
    if (expiry && expiry.at <= now) {
      reason = `expired: ${expiry.reason}`;
      break;
    }
    if (workflowInfo().historyLength > MAX_HISTORY_EVENTS) {
      await continueAsNew<typeof sandboxLifecycle>({ ...input, spec, phase: 'running', state: state(), lastUsedAt, meteredUntil, ledger });
    }
    const untilMeter = meteredUntil + METER_INTERVAL_MS - now;
    const untilExpiry = Math.min(expiry ? expiry.at - now : Infinity, untilMeter);
    woken = false;
    if (state() === 'RUNNING') {
      const idleAt = lastUsedAt + input.idleTimeoutMs;
      const wait = Math.max(MIN_WAIT_MS, Math.min(idleAt - now, untilExpiry));
      if (await condition(() => deleting || woken, wait)) continue;
      if (Date.now() < lastUsedAt + input.idleTimeoutMs) continue;
      // The node checks the sandbox itself: a request in flight or a foreground command keeps it up.
      const standby = await node.enterStandby(key, input.idleTimeoutMs, knownGeneration(ledger));
      lastUsedAt = Math.max(lastUsedAt, standby.lastUsedAt);
      // A `resumed` heard meanwhile carries a later generation and keeps the state RUNNING.
      ledger = noteObserved(ledger, standby.freeze);
    } else {
      // Only a resume (or the node's word) makes it RUNNING; a touch or spec change re-checks the rest.
      await condition(() => deleting || woken, Math.max(MIN_WAIT_MS, untilExpiry));
    }
  }
  return cleanUp(reason);

  async function cleanUp(why: string): Promise<void> {
    await control.markSandboxDeleting(key, why);
    // What it holds is measured while it still exists; usage ends where the node removed it.
    const measured = metering ? await node.measureSandbox(key, spec.runtime?.image ?? DEFAULT_SANDBOX_IMAGE) : undefined;
    const stopped = await node.stopSandbox(key);
    if (!measured) return control.deleteSandboxRecord(key);
    if (stopped.freeze) ledger = noteObserved(ledger, stopped.freeze);
    if (lastChangeAt(ledger) > meteredUntil) await meter(lastChangeAt(ledger), measured);
    await meter(stopped.stoppedAt, measured);
    await control.deleteSandboxRecord(key, stopped.stoppedAt);
  }
}

/**
 * A run carried over from before generations knew only a state. Its node has no generation
 * recorded either, and counts its first freeze found as generation 0: a standby is that freeze.
 */
function legacyLedger(input: SandboxLifecycleInput): StandbyLedger {
  return input.state === 'STANDBY' ? { frozen: { generation: 0, at: input.meteredUntil ?? 0 } } : {};
}
