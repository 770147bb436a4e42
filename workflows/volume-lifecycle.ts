import { condition, continueAsNew, defineSignal, proxyActivities, upsertSearchAttributes, setHandler, workflowInfo } from '@temporalio/workflow';
import type { VolumeControlActivities } from '../activities/volume-control';
import type { VolumeNodeActivities } from '../activities/volume-node';
import type { VolumeKey } from '../domain/volume/volume';

export interface VolumeLifecycleInput {
  key: VolumeKey;
  sizeMb: number;
  nodeQueue: string;
  /** A new volume, one carried over by continue-as-new, or a cleanup. */
  phase: 'create' | 'running' | 'delete';
  /** Usage is recorded up to here (continue-as-new carries it over). */
  meteredUntil?: number;
}

export const deleteVolumeSignal = defineSignal('delete');
/** The user grew the volume (the route refuses shrinking). */
export const resizeVolumeSignal = defineSignal<[number]>('resize');

/** Storage is recorded at every size change and at least this often. */
const METER_INTERVAL_MS = 60_000;
const MAX_HISTORY_EVENTS = 5_000;

/**
 * One volume's life: create its storage on the node, meter its size while it exists, grow it when
 * asked, and delete its storage (unmounting it) when the volume is deleted.
 */
export async function volumeLifecycle(input: VolumeLifecycleInput): Promise<void> {
  const control = proxyActivities<VolumeControlActivities>({
    startToCloseTimeout: '30s',
    retry: { initialInterval: '200ms', maximumInterval: '10s' },
  });
  const node = proxyActivities<VolumeNodeActivities>({
    taskQueue: input.nodeQueue,
    startToCloseTimeout: '120s',
    retry: { initialInterval: '200ms', maximumInterval: '10s', maximumAttempts: 20 },
  });
  const { key } = input;
  let sizeMb = input.sizeMb;
  let requestedSizeMb = sizeMb;
  let deleting = input.phase === 'delete';
  let metering = input.phase === 'running';
  let meteredUntil = input.meteredUntil ?? Date.now();

  setHandler(deleteVolumeSignal, () => {
    deleting = true;
  });
  setHandler(resizeVolumeSignal, (next) => {
    requestedSizeMb = Math.max(requestedSizeMb, next);
  });
  upsertSearchAttributes({ HangarWorkspace: [key.workspace], HangarResourceKind: ['volume'], HangarResourceName: [key.name] });

  async function meter(until: number): Promise<void> {
    if (!metering || until <= meteredUntil) return;
    await control.recordVolumeUsage({ key, from: meteredUntil, to: until, sizeMb });
    meteredUntil = until;
  }

  let deployedAt: number | undefined;
  if (input.phase === 'create') {
    try {
      const storage = await node.createVolumeStorage(key, sizeMb);
      // Metering starts when the volume was deployed, as the activity saw it (its state history says the same).
      deployedAt = await control.markVolumeDeployed(
        key,
        storage.kind === 'loop'
          ? { type: 'Normal', message: `storage ready: an ext4 image of ${sizeMb} MB` }
          : { type: 'Warning', message: `storage ready as a plain folder, size not enforced: ${storage.reason}` },
        { sizeMb },
      );
    } catch (err) {
      await control.markVolumeFailed(key, `failed to create storage: ${(err as Error).message}`);
      await condition(() => deleting);
      return cleanUp();
    }
    meteredUntil = deployedAt ?? Date.now();
    metering = true;
  }

  while (!deleting) {
    if (requestedSizeMb > sizeMb) {
      const grownAt = Date.now();
      await meter(grownAt);
      const grown = await node.growVolumeStorage(key, requestedSizeMb);
      sizeMb = requestedSizeMb;
      await control.markVolumeDeployed(
        key,
        grown.pending
          ? { type: 'Warning', message: `grown to ${sizeMb} MB; the file system follows when next mounted (online resize refused: ${grown.pending})` }
          : { type: 'Normal', message: `grown to ${sizeMb} MB` },
        { sizeMb, since: grownAt },
      );
    }
    if (Date.now() - meteredUntil >= METER_INTERVAL_MS) await meter(Date.now());
    if (workflowInfo().historyLength > MAX_HISTORY_EVENTS) {
      await continueAsNew<typeof volumeLifecycle>({ ...input, sizeMb, phase: 'running', meteredUntil });
    }
    const wait = Math.max(1, meteredUntil + METER_INTERVAL_MS - Date.now());
    await condition(() => deleting || requestedSizeMb > sizeMb, wait);
  }
  return cleanUp();

  async function cleanUp(): Promise<void> {
    const deletedAt = await control.markVolumeDeleting(key, 'deleted by request');
    await meter(deletedAt ?? Date.now());
    await node.deleteVolumeStorage(key);
    await control.deleteVolumeRecord(key);
  }
}
