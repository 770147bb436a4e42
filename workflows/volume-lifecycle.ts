import { condition, continueAsNew, defineSignal, patched, proxyActivities, upsertSearchAttributes, setHandler, workflowInfo } from '@temporalio/workflow';
import type { ResourcePlacementActivities } from '../activities/resource-placement';
import type { VolumeControlActivities } from '../activities/volume-control';
import type { VolumeNodeActivities } from '../activities/volume-node';
import type { VolumeKey } from '../domain/volume/volume';
import { requestedSize, storageGrownEvent, storageReadyEvent } from '../domain/volume/lifecycle';
import { meterDue, nextMeterAt } from '../domain/billing/meter-schedule';

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

const MAX_HISTORY_EVENTS = 5_000;
/**
 * A resize heard while the node grows the storage is grown by the next pass, instead of being
 * taken as done (the storage stayed at the size asked before, metered at the later one). Runs
 * that grew before this fix replay as they ran.
 */
const GROW_TO_EACH_SIZE_ASKED_PATCH = 'grow-to-each-size-asked';
/** A new volume is placed on a node by its workflow (runs started before used the API's node). */
export const VOLUME_PLACEMENT_PATCH = 'volume-placement';

/**
 * One volume's life: create its storage on the node, meter its size while it exists, grow it when
 * asked, and delete its storage (unmounting it) when the volume is deleted. Storage is recorded
 * at every size change and at least once a metering interval (domain/billing/meter-schedule.ts).
 */
export async function volumeLifecycle(input: VolumeLifecycleInput): Promise<void> {
  const run = new VolumeRun(input);
  run.listen();
  const { key } = input;
  upsertSearchAttributes({ HangarWorkspace: [key.workspace], HangarResourceKind: ['volume'], HangarResourceName: [key.name] });
  // A volume whose storage could not be created stays visible (with its reason) until deleted.
  if (input.phase === 'create' && !(await run.createStorage())) return run.cleanUp();
  await run.meterUntilDeleted();
  return run.cleanUp();
}

/**
 * One run of the volume lifecycle workflow: what it knows (carried over by continue-as-new) and
 * its steps. Every step issues its commands (activities, timers) in the order the workflow
 * always has: histories of runs started on earlier code replay on this one.
 */
class VolumeRun {
  private readonly control = proxyActivities<VolumeControlActivities & ResourcePlacementActivities>({
    startToCloseTimeout: '30s',
    retry: { initialInterval: '200ms', maximumInterval: '10s' },
  });
  private node!: ReturnType<typeof proxyActivities<VolumeNodeActivities>>;
  /** The queue of the volume's node: the API's before placement, then the one placement chose. */
  private nodeQueue!: string;
  private readonly key: VolumeKey;
  private sizeMb: number;
  private requestedSizeMb: number;
  private deleting: boolean;
  private metering: boolean;
  private meteredUntil: number;

  constructor(private readonly input: VolumeLifecycleInput) {
    this.useNode(input.nodeQueue);
    this.key = input.key;
    this.sizeMb = input.sizeMb;
    this.requestedSizeMb = input.sizeMb;
    this.deleting = input.phase === 'delete';
    this.metering = input.phase === 'running';
    this.meteredUntil = input.meteredUntil ?? Date.now();
  }

  /** Sends the node's steps to `queue`. */
  private useNode(queue: string): void {
    this.nodeQueue = queue;
    this.node = proxyActivities<VolumeNodeActivities>({
      taskQueue: queue,
      startToCloseTimeout: '120s',
      retry: { initialInterval: '200ms', maximumInterval: '10s', maximumAttempts: 20 },
    });
  }

  listen(): void {
    setHandler(deleteVolumeSignal, () => {
      this.deleting = true;
    });
    setHandler(resizeVolumeSignal, (next) => {
      this.requestedSizeMb = requestedSize(this.requestedSizeMb, next);
    });
  }

  /** Creates the storage and marks the volume DEPLOYED; false when that failed and the volume was then deleted. */
  async createStorage(): Promise<boolean> {
    const { key, sizeMb } = this;
    let deployedAt: number | undefined;
    try {
      // Placed by free memory among the READY nodes and recorded on its row: a retry answers the same node.
      if (patched(VOLUME_PLACEMENT_PATCH)) this.useNode((await this.control.placeVolume(key.id)).nodeQueue);
      const storage = await this.node.createVolumeStorage(key, sizeMb);
      // Metering starts when the volume was deployed, as the activity saw it (its state history says the same).
      deployedAt = await this.control.markVolumeDeployed(key, storageReadyEvent(storage, sizeMb), { sizeMb });
    } catch (err) {
      await this.control.markVolumeFailed(key, `failed to create storage: ${(err as Error).message}`);
      await condition(() => this.deleting);
      return false;
    }
    this.meteredUntil = deployedAt ?? Date.now();
    this.metering = true;
    return true;
  }

  /** Grows the volume when asked and meters it, until it is deleted. */
  async meterUntilDeleted(): Promise<void> {
    while (!this.deleting) {
      if (this.requestedSizeMb > this.sizeMb) await this.grow();
      if (meterDue(this.meteredUntil, Date.now())) await this.meter(Date.now());
      if (workflowInfo().historyLength > MAX_HISTORY_EVENTS) {
        await continueAsNew<typeof volumeLifecycle>({ ...this.input, nodeQueue: this.nodeQueue, sizeMb: this.sizeMb, phase: 'running', meteredUntil: this.meteredUntil });
      }
      const wait = Math.max(1, nextMeterAt(this.meteredUntil) - Date.now());
      await condition(() => this.deleting || this.requestedSizeMb > this.sizeMb, wait);
    }
  }

  /** The old size is metered up to the growth, the new one from there. */
  private async grow(): Promise<void> {
    const grownAt = Date.now();
    await this.meter(grownAt);
    const target = this.requestedSizeMb;
    const grown = await this.node.growVolumeStorage(this.key, target);
    this.sizeMb = patched(GROW_TO_EACH_SIZE_ASKED_PATCH) ? target : this.requestedSizeMb;
    await this.control.markVolumeDeployed(this.key, storageGrownEvent(this.sizeMb, grown.pending), { sizeMb: this.sizeMb, since: grownAt });
  }

  private async meter(until: number): Promise<void> {
    if (!this.metering || until <= this.meteredUntil) return;
    await this.control.recordVolumeUsage({ key: this.key, from: this.meteredUntil, to: until, sizeMb: this.sizeMb });
    this.meteredUntil = until;
  }

  async cleanUp(): Promise<void> {
    const deletedAt = await this.control.markVolumeDeleting(this.key, 'deleted by request');
    await this.meter(deletedAt ?? Date.now());
    await this.node.deleteVolumeStorage(this.key);
    await this.control.deleteVolumeRecord(this.key);
  }
}
