import { ApplicationFailure } from '@temporalio/activity';
import type { Pool } from 'pg';
import { ResourceStore } from '../store/resources';
import { StateHistory } from '../store/state-history';
import { NodeImageStore } from '../store/node-images';
import { ensureNodeBaseImage, type NodeImageRecords } from './node-base-image';
import { BUILT_BASE_IMAGE, UNRECORDED_IMAGE } from '../domain/images/builtin';
import { DEFAULT_SANDBOX_MEMORY_MB, type SandboxKey, type SandboxSpec } from '../domain/sandbox/sandbox';
import { SandboxNotFoundError, SandboxSpecError, type FreezeState, type RuntimeVolumeMount, type SandboxRemoval, type SandboxRuntime } from '../runtime/sandbox-runtime';
import type { VolumeStore } from '../runtime/volume-store';
import { RegistryImageStore } from '../store/registry-images';
import { pullResourceImage, type ImagePullDeps, type PullRuntime } from './image-pull-node';
import { whileHeartbeating } from './support/heartbeat';
import type { RegistryAccounts } from './support/registry-accounts';

/** The runtime plus what metering and images from registries need of it. */
export type NodeRuntime = SandboxRuntime &
  PullRuntime & {
  imageStorageBytes(id: string, image: string): Promise<number>;
  restoreFiles(id: string, snapshotId: string, restoreId: string): Promise<FreezeState>;
  ensureBaseImage(progress?: (step: string) => void): Promise<{ digest: string; storedBytes: number }>;
  findBaseImage(): Promise<{ digest: string; storedBytes: number } | undefined>;
};

/** A restore asked for through the API: the snapshot (one of the sandbox's own) and the request's id. */
export interface RestoreRequest {
  snapshotId: string;
  snapshotName: string;
  restoreId: string;
}

export interface SandboxNodeDeps {
  runtime: NodeRuntime;
  volumes?: VolumeStore;
  pg: Pool;
  registryAccounts?: RegistryAccounts;
  /** The node's id, under which it records the built-in images it builds (store/node-images.ts). */
  nodeId?: string;
  /** This node's task queue, where the image pulls of its sandboxes run (image-pull-node.ts). */
  nodeQueue: string;
}

/**
 * The node side of a sandbox's life, run by the runtime worker of the node that hosts it. Every
 * activity is idempotent (start returns the running sandbox, remove of a missing one is a no-op),
 * so retries after a worker crash are safe.
 */
export function createSandboxNodeActivities({ runtime, volumes, pg, registryAccounts, nodeId, nodeQueue }: SandboxNodeDeps) {
  const store = new ResourceStore(pg);
  const pulls: ImagePullDeps = { runtime, store, images: new RegistryImageStore(pg), nodeQueue, ...(registryAccounts ? { registryAccounts } : {}) };
  const history = new StateHistory(pg);
  const nodeImages = nodeId === undefined ? undefined : { store: new NodeImageStore(pg), nodeId };
  return {
    /** Starts the sandbox and marks it DEPLOYED; answers since when it runs (see startSandbox below). */
    startSandbox: (key: SandboxKey, spec: SandboxSpec, seedSnapshotId?: string) => whileHeartbeating(() => startSandbox({ runtime, volumes, store, history }, key, spec, seedSnapshotId)),

    /** Pulls the sandbox's (a workload's, a job's) image onto this node when it comes from a registry, with its progress (image-pull-node.ts). */
    pullSandboxImage: (key: SandboxKey, spec: SandboxSpec) => whileHeartbeating(() => pullResourceImage(pulls, key, spec)),
    /** Builds base-image unless the node has it, the sandbox saying it waits for it (prepareBaseImage below). */
    prepareBaseImage: (key: SandboxKey) => whileHeartbeating(() => prepareBaseImage({ runtime, store, nodeImages }, key)),

    /**
     * Freezes the sandbox unless it is serving a request, running a command someone waits on or
     * one started with keepAlive, or
     * was used within the idle period (the gateway's touches are throttled, the sandbox's own
     * record is exact). Returns the last use it saw, so the workflow can wait again from there,
     * and the node's freeze state either way.
     *
     * It freezes only in the generation the workflow knows of (`knownGeneration`): a sandbox
     * frozen and thawed since (by this activity's earlier attempt, whose answer was lost with
     * its worker) is reported, not frozen again, so the workflow hears of every freeze cycle
     * before the next starts. A frozen sandbox is reported as is: it cannot be asked for its
     * activity.
     */
    enterStandby: (key: SandboxKey, idleTimeoutMs: number, knownGeneration?: number) => enterStandby(runtime, key, idleTimeoutMs, knownGeneration),

    /** New environment variables for the running sandbox (see SandboxRuntime.updateEnvs); idempotent. */
    async updateSandboxEnvs(key: SandboxKey, spec: SandboxSpec): Promise<void> {
      await runtime.updateEnvs(key.id, runtimeEnvs(spec));
    },

    /**
     * The sandbox's network policy, from its next connection on (see SandboxRuntime.updateNetwork);
     * idempotent. A policy the node cannot take for this sandbox (gone from the node, `internet`
     * changed) will not become takeable by retrying.
     */
    async updateSandboxNetwork(key: SandboxKey, spec: SandboxSpec): Promise<void> {
      try {
        await runtime.updateNetwork(key.id, spec.network);
      } catch (err) {
        if (err instanceof SandboxSpecError || err instanceof SandboxNotFoundError) throw ApplicationFailure.nonRetryable(err.message, err.name);
        throw err;
      }
    },

    /** The sandbox's freeze state now, and the moment it was read (by this node's clock). */
    async freezeState(key: SandboxKey): Promise<ObservedFreeze> {
      const state = await runtime.freezeState(key.id);
      return { ...state, observedAt: Date.now() };
    },

    /**
     * What the sandbox holds now: memory charged to its cgroup, and its image storage (the image
     * as the platform stores it plus the sandbox's own writable layer).
     */
    async measureSandbox(key: SandboxKey, image: string): Promise<{ memoryBytes: number; imageBytes: number }> {
      const [status, imageBytes] = await Promise.all([runtime.status(key.id), runtime.imageStorageBytes(key.id, image)]);
      return { memoryBytes: status?.memoryUsageBytes ?? 0, imageBytes };
    },

    /**
     * Puts the sandbox back to one of its snapshots, processes started afresh (see
     * BwrapRuntime.restoreFiles), saying so on its events. Answers whether it was restored and the
     * node's freeze state after: a snapshot whose files are gone leaves the sandbox as it was, with
     * a Warning saying why; a start that fails after the files changed is an error (retried).
     */
    restoreSandbox: (key: SandboxKey, request: RestoreRequest) => whileHeartbeating(() => restoreSandbox(runtime, store, key, request)),

    /**
     * Removes the sandbox. Answers when it was gone (metering ends there) and its last freeze
     * state, so that a thaw the workflow did not hear of is still metered as running.
     */
    // The node answers a retried stop as it did the first (a worker may die after the removal):
    // the moment it stopped, and its freeze state then, a thaw no one signalled included.
    stopSandbox: (key: SandboxKey): Promise<SandboxRemoval> => whileHeartbeating(() => runtime.remove(key.id)),
  };
}

/** See enterStandby in createSandboxNodeActivities. */
async function enterStandby(runtime: NodeRuntime, key: SandboxKey, idleTimeoutMs: number, knownGeneration?: number): Promise<StandbyAnswer> {
  const before = await runtime.freezeState(key.id);
  const unseen = knownGeneration !== undefined && before.generation !== knownGeneration;
  if (before.frozen || unseen) return { frozen: before.frozen, lastUsedAt: 0, freeze: before };
  const activity = await runtime.activity(key.id);
  const lastUsedAt = Date.parse(activity.lastRequestAt) || 0;
  if (activity.inflightRequests > 0 || activity.keepAliveProcesses > 0) return { frozen: false, lastUsedAt: Date.now(), freeze: before };
  if (Date.now() - lastUsedAt < idleTimeoutMs) return { frozen: false, lastUsedAt, freeze: before };
  return { frozen: true, lastUsedAt, freeze: await runtime.freeze(key.id) };
}

/** The sandbox's environment variables as the runtime takes them. */
const runtimeEnvs = (spec: SandboxSpec) => (spec.runtime?.envs ?? []).map(({ name, value }) => ({ name, value }));

/** The sandbox's volumes as host folders; the control plane resolved their names to ids. */
async function volumeMounts(volumes: VolumeStore | undefined, spec: SandboxSpec): Promise<RuntimeVolumeMount[]> {
  const mounts: RuntimeVolumeMount[] = [];
  for (const volume of spec.volumes ?? []) {
    if (!volumes) throw ApplicationFailure.nonRetryable('this node worker has no volume store', 'SandboxSpecError');
    if (!volume.volumeId) throw ApplicationFailure.nonRetryable(`volume '${volume.name}' was not resolved to an id`, 'SandboxSpecError');
    mounts.push({ hostPath: await volumes.ensureMounted(volume.volumeId), mountPath: volume.mountPath, readOnly: volume.readOnly ?? false });
  }
  return mounts;
}

/**
 * Starts the sandbox and marks it DEPLOYED (RUNNING) in the same activity: creation is on
 * the user's critical path, and a separate control activity would add a workflow round trip.
 * Answers since when it runs, by this node's clock: where its state history and its metering start.
 */
async function startSandbox(
  { runtime, volumes, store, history }: { runtime: NodeRuntime; volumes?: VolumeStore; store: ResourceStore; history: StateHistory },
  key: SandboxKey,
  spec: SandboxSpec,
  seedSnapshotId: string | undefined,
): Promise<{ startedAt: number }> {
  const mounts = await volumeMounts(volumes, spec);
  const memoryMb = spec.runtime?.memory ?? DEFAULT_SANDBOX_MEMORY_MB;
  try {
    await runtime.start({
      id: key.id,
      workspaceId: key.workspaceId,
      name: key.name,
      image: spec.runtime?.image ?? UNRECORDED_IMAGE,
      memoryMb,
      envs: runtimeEnvs(spec),
      volumes: mounts,
      seedSnapshotId,
      network: spec.network,
    });
  } catch (err) {
    // A spec the runtime cannot honour will not get better by retrying.
    if (err instanceof SandboxSpecError) throw ApplicationFailure.nonRetryable(err.message, 'SandboxSpecError');
    throw err;
  }
  // Only a sandbox still starting: one whose deletion was asked for meanwhile stays DELETING.
  await store.transition(key.id, 'DEPLOYED', { type: 'Normal', message: 'sandbox is running' }, { state: 'RUNNING', lastUsedAt: new Date().toISOString() }, 'DEPLOYING');
  const sandbox = { workspaceId: key.workspaceId, resourceType: 'sandbox' as const, resourceUuid: key.id, resourceName: key.name };
  return { startedAt: await history.enter(sandbox, { state: 'RUNNING', memoryMb, storedBytes: 0 }, Date.now()) };
}

/**
 * base-image for a sandbox on it: found on the node, or built now (ensureNodeBaseImage, shared
 * with the node worker's build at its start), the sandbox's events and status saying it waits
 * for its image meanwhile. A build cut short by a worker's restart is made again by the
 * activity's retry.
 */
async function prepareBaseImage(
  { runtime, store, nodeImages }: { runtime: NodeRuntime; store: ResourceStore; nodeImages?: NodeImageRecords },
  key: SandboxKey,
): Promise<{ digest: string }> {
  const reference = BUILT_BASE_IMAGE;
  const image = await ensureNodeBaseImage(runtime, nodeImages, {
    present: (present) => store.note(key.id, { type: 'Normal', message: `image '${reference}' is on the node (${present.digest})` }, { image: { reference, digest: present.digest, pull: 'PRESENT' } }),
    building: () => store.note(key.id, { type: 'Normal', message: `waiting for its image: building '${reference}' on the node from Debian's packages` }, { image: { reference, pull: 'BUILDING' } }),
    built: (built) =>
      store.note(key.id, { type: 'Normal', message: `image '${reference}' built (${built.digest}, ${built.storedBytes} bytes)` }, { image: { reference, digest: built.digest, pull: 'BUILT' } }),
  });
  return { digest: image.digest };
}

/** See the activity restoreSandbox above. */
async function restoreSandbox(runtime: NodeRuntime, store: ResourceStore, key: SandboxKey, request: RestoreRequest): Promise<ObservedFreeze & { restored: boolean }> {
  try {
    const freeze = await runtime.restoreFiles(key.id, request.snapshotId, request.restoreId);
    await store.note(key.id, { type: 'Normal', message: `restored to snapshot '${request.snapshotName}': files replaced, processes started afresh` }, {});
    return { ...freeze, observedAt: Date.now(), restored: true };
  } catch (err) {
    if (!(err instanceof SandboxSpecError)) throw err;
    await store.note(key.id, { type: 'Warning', message: `restore to snapshot '${request.snapshotName}' refused: ${err.message}` }, {});
    return { ...(await runtime.freezeState(key.id)), observedAt: Date.now(), restored: false };
  }
}

/** What enterStandby did, and the node's freeze state after it. */
export interface StandbyAnswer {
  frozen: boolean;
  lastUsedAt: number;
  freeze: FreezeState;
}

export type ObservedFreeze = FreezeState & { observedAt: number };

export type SandboxNodeActivities = ReturnType<typeof createSandboxNodeActivities>;
