import { ApplicationFailure } from '@temporalio/activity';
import type { Pool } from 'pg';
import { ResourceStore } from '../api/management/resources/store';
import { StateHistory } from '../db/state-history';
import { DEFAULT_SANDBOX_IMAGE, DEFAULT_SANDBOX_MEMORY_MB, type SandboxKey, type SandboxSpec } from '../core/sandbox/types';
import { SandboxSpecError, type RuntimeVolumeMount, type SandboxRuntime } from '../runtime/types';
import type { VolumeStore } from '../runtime/volume-store';
import { whileHeartbeating } from './heartbeat';

/** The runtime plus what metering needs of it. */
export type NodeRuntime = SandboxRuntime & { imageStorageBytes(id: string, image: string): Promise<number> };

/**
 * The node side of a sandbox's life, run by the runtime worker of the node that hosts it. Every
 * activity is idempotent (start returns the running sandbox, remove of a missing one is a no-op),
 * so retries after a worker crash are safe.
 */
export function createSandboxNodeActivities({ runtime, volumes, pg }: { runtime: NodeRuntime; volumes?: VolumeStore; pg: Pool }) {
  const store = new ResourceStore(pg);
  const history = new StateHistory(pg);

  /** The sandbox's volumes as host folders; the control plane resolved their names to ids. */
  async function volumeMounts(spec: SandboxSpec): Promise<RuntimeVolumeMount[]> {
    const mounts: RuntimeVolumeMount[] = [];
    for (const volume of spec.volumes ?? []) {
      if (!volumes) throw ApplicationFailure.nonRetryable('this node worker has no volume store', 'SandboxSpecError');
      if (!volume.volumeId) throw ApplicationFailure.nonRetryable(`volume '${volume.name}' was not resolved to an id`, 'SandboxSpecError');
      mounts.push({ hostPath: await volumes.ensureMounted(volume.volumeId), mountPath: volume.mountPath, readOnly: volume.readOnly ?? false });
    }
    return mounts;
  }

  return {
    /**
     * Starts the sandbox and marks it DEPLOYED (RUNNING) in the same activity: creation is on
     * the user's critical path, and a separate control activity would add a workflow round trip.
     * Answers since when it runs: where its state history and its metering start.
     */
    startSandbox: (key: SandboxKey, spec: SandboxSpec): Promise<number> => whileHeartbeating(async () => {
      const mounts = await volumeMounts(spec);
      const memoryMb = spec.runtime?.memory ?? DEFAULT_SANDBOX_MEMORY_MB;
      try {
        await runtime.start({
          id: key.id,
          workspaceId: key.workspaceId,
          name: key.name,
          image: spec.runtime?.image ?? DEFAULT_SANDBOX_IMAGE,
          memoryMb,
          envs: (spec.runtime?.envs ?? []).map(({ name, value }) => ({ name, value })),
          volumes: mounts,
        });
      } catch (err) {
        // A spec the runtime cannot honour will not get better by retrying.
        if (err instanceof SandboxSpecError) throw ApplicationFailure.nonRetryable(err.message, 'SandboxSpecError');
        throw err;
      }
      await store.transition(key.id, 'DEPLOYED', { type: 'Normal', message: 'sandbox is running' }, { state: 'RUNNING', lastUsedAt: new Date().toISOString() });
      const sandbox = { workspaceId: key.workspaceId, resourceType: 'sandbox' as const, resourceUuid: key.id, resourceName: key.name };
      return history.enter(sandbox, { state: 'RUNNING', memoryMb, storedBytes: 0 }, Date.now());
    }),

    /**
     * Freezes the sandbox unless it is serving a request, running a command someone waits on, or
     * was used within the idle period (the gateway's touches are throttled, the sandbox's own
     * record is exact). Returns the last use it saw, so the workflow can wait again from there.
     */
    async enterStandby(key: SandboxKey, idleTimeoutMs: number): Promise<{ frozen: boolean; lastUsedAt: number }> {
      const activity = await runtime.activity(key.id);
      const lastUsedAt = Date.parse(activity.lastRequestAt) || 0;
      if (activity.inflightRequests > 0) return { frozen: false, lastUsedAt: Date.now() };
      if (Date.now() - lastUsedAt < idleTimeoutMs) return { frozen: false, lastUsedAt };
      await runtime.freeze(key.id);
      return { frozen: true, lastUsedAt };
    },

    /**
     * What the sandbox holds now: memory charged to its cgroup, and its image storage (the image
     * as the platform stores it plus the sandbox's own writable layer).
     */
    async measureSandbox(key: SandboxKey, image: string): Promise<{ memoryBytes: number; imageBytes: number }> {
      const [status, imageBytes] = await Promise.all([runtime.status(key.id), runtime.imageStorageBytes(key.id, image)]);
      return { memoryBytes: status?.memoryUsageBytes ?? 0, imageBytes };
    },

    stopSandbox: (key: SandboxKey): Promise<void> => whileHeartbeating(() => runtime.remove(key.id)),
  };
}

export type SandboxNodeActivities = ReturnType<typeof createSandboxNodeActivities>;
