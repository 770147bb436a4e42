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
import { nextExpiry } from '../core/sandbox/expiry';
import { DEFAULT_SANDBOX_IMAGE, DEFAULT_SANDBOX_MEMORY_MB, type SandboxKey, type SandboxSpec, type SandboxState } from '../core/sandbox/types';

export interface SandboxLifecycleInput {
  key: SandboxKey;
  spec: SandboxSpec;
  nodeQueue: string;
  idleTimeoutMs: number;
  createdAt: number;
  /** Where a run starts: a new sandbox, one carried over by continue-as-new, or a cleanup. */
  phase: 'create' | 'running' | 'delete';
  state?: SandboxState;
  lastUsedAt?: number;
  /** Usage is recorded up to here (continue-as-new carries it over). */
  meteredUntil?: number;
}

/** A request reached the sandbox (sent by the gateway, throttled). */
export const touchSignal = defineSignal<[number]>('touch');
/** The gateway thawed a sandbox in standby to serve a request. */
export const resumedSignal = defineSignal<[number]>('resumed');
export const deleteSignal = defineSignal('delete');
/** The user changed lifetime rules (ttl, expiration policies). */
export const specSignal = defineSignal<[SandboxSpec]>('spec');
export const stateQuery = defineQuery<{ state: SandboxState; lastUsedAt: number }>('state');

// Signals from busy sandboxes add history; start afresh well before Temporal's limits.
const MAX_HISTORY_EVENTS = 5_000;
/** Usage is recorded at every state change and at least this often. */
const METER_INTERVAL_MS = 60_000;

/**
 * One sandbox's life: start it on its node, keep it RUNNING while used, freeze it into STANDBY
 * after the idle period, note resumes, and delete it when asked or when a ttl or expiration
 * policy says so. Every step is an activity, so a worker killed at any point resumes here.
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
  let state: SandboxState = input.state ?? 'RUNNING';
  let lastUsedAt = input.lastUsedAt ?? input.createdAt;
  let deleting = input.phase === 'delete';
  let woken = false;
  // Metering: usage is recorded per period in the state the sandbox had during it.
  let meteredUntil = input.meteredUntil ?? Date.now();
  let meterState: SandboxState = state;
  let metering = input.phase === 'running';
  let stateChangedAt = Date.now();

  setHandler(deleteSignal, () => {
    deleting = true;
  });
  setHandler(touchSignal, (at) => {
    lastUsedAt = Math.max(lastUsedAt, at);
    woken = true;
  });
  setHandler(resumedSignal, (at) => {
    lastUsedAt = Math.max(lastUsedAt, at);
    if (state === 'STANDBY') {
      state = 'RUNNING';
      stateChangedAt = Date.now();
    }
    woken = true;
  });
  setHandler(specSignal, (next) => {
    spec = next;
    woken = true;
  });
  setHandler(stateQuery, () => ({ state, lastUsedAt }));

  upsertSearchAttributes({ HangarWorkspace: [key.workspace], HangarResourceKind: ['sandbox'], HangarResourceName: [key.name] });

  let reason = 'deleted by request';
  // Metering starts when the sandbox was running, as the activity saw it (its state history says the same).
  let runningSince: number | undefined;
  if (input.phase === 'create') {
    try {
      // Also marks it DEPLOYED (see the activity).
      runningSince = await node.startSandbox(key, spec);
    } catch (err) {
      await control.markSandboxFailed(key, `failed to start: ${(err as Error).message}`);
      // A failed sandbox stays visible (with its reason) until deleted.
      await condition(() => deleting);
      return cleanUp(reason);
    }
    meteredUntil = runningSince ?? Date.now();
    metering = true;
  }

  /** Records usage from meteredUntil to `until` as `asState`; ids follow the period, so retries count once. */
  async function meter(until: number, asState: SandboxState): Promise<void> {
    if (until <= meteredUntil) return;
    const image = spec.runtime?.image ?? DEFAULT_SANDBOX_IMAGE;
    const measured = await node.measureSandbox(key, image);
    await control.recordSandboxUsage({
      key,
      from: meteredUntil,
      to: until,
      state: asState,
      memoryMb: spec.runtime?.memory ?? DEFAULT_SANDBOX_MEMORY_MB,
      frozenBytes: measured.memoryBytes,
      diskBytes: measured.imageBytes,
    });
    meteredUntil = until;
  }

  let persistedState: SandboxState | undefined = input.phase === 'running' ? state : 'RUNNING';
  while (!deleting) {
    if (meterState !== state) {
      await meter(stateChangedAt, meterState);
      meterState = state;
    }
    if (Date.now() - meteredUntil >= METER_INTERVAL_MS) await meter(Date.now(), state);
    if (persistedState !== state) {
      await control.setSandboxState(key, state, lastUsedAt, stateChangedAt);
      persistedState = state;
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
      await continueAsNew<typeof sandboxLifecycle>({ ...input, spec, phase: 'running', state, lastUsedAt, meteredUntil });
    }
    const untilMeter = meteredUntil + METER_INTERVAL_MS - now;
    const untilExpiry = Math.min(expiry ? expiry.at - now : Infinity, untilMeter);
    woken = false;
    if (state === 'RUNNING') {
      const idleAt = lastUsedAt + input.idleTimeoutMs;
      const wait = Math.max(1, Math.min(idleAt - now, untilExpiry));
      if (await condition(() => deleting || woken, wait)) continue;
      if (Date.now() < lastUsedAt + input.idleTimeoutMs) continue;
      // The node checks the sandbox itself: a request in flight or a foreground command keeps it up.
      const standbyAt = Date.now();
      const standby = await node.enterStandby(key, input.idleTimeoutMs);
      lastUsedAt = Math.max(lastUsedAt, standby.lastUsedAt);
      if (standby.frozen) {
        await meter(standbyAt, 'RUNNING');
        state = 'STANDBY';
        meterState = 'STANDBY';
        stateChangedAt = standbyAt;
      }
    } else {
      await condition(() => deleting || woken, Math.max(1, untilExpiry));
      if (woken && state === 'STANDBY') {
        // Woken by a touch or spec change while frozen: only a resume makes it RUNNING.
        continue;
      }
    }
  }
  return cleanUp(reason);

  async function cleanUp(why: string): Promise<void> {
    const deletedAt = await control.markSandboxDeleting(key, why);
    // Usage up to the end is recorded before the sandbox goes; it was running only if it deployed.
    if (metering) await meter(deletedAt ?? Date.now(), state);
    await node.stopSandbox(key);
    await control.deleteSandboxRecord(key);
  }
}
