import { condition, continueAsNew, defineSignal, defineUpdate, patched, proxyActivities, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { SnapshotControlActivities } from '../activities/snapshot-control';
import type { SnapshotNodeActivities } from '../activities/snapshot-node';
import { METER_INTERVAL_MS } from '../domain/billing/meter-schedule';
import { failureReason } from '../domain/failure-reason';
import type { SnapshotKey, SnapshotStatus } from '../domain/sandbox/snapshot';

export interface SnapshotLifecycleInput {
  key: SnapshotKey;
  /** The runtime id (resource uuid) of the sandbox whose files are captured. */
  sourceId: string;
  /** The node holding the source sandbox, and then the snapshot's files. */
  nodeQueue: string;
  /**
   * A new snapshot, one captured and billed for its storage (carried over by continue-as-new), or
   * the removal of one whose workflow is gone.
   */
  phase: 'create' | 'stored' | 'delete';
  /** Storage is billed up to here (phase 'stored'). */
  meteredUntil?: number;
}

/** Ready snapshots are billed for their storage until deleted (runs started before were not). */
const STORAGE_METERING_PATCH = 'snapshot-storage-metering';
// A stored snapshot records usage every minute: start afresh well before Temporal's limits.
const MAX_HISTORY_EVENTS = 5_000;

export const deleteSnapshotSignal = defineSignal('delete');
/**
 * Answers once the capture has ended, with its outcome: the API starts the workflow with it
 * (update-with-start) to answer a create or a fork, unless the node's notice of the outcome comes first.
 */
export const capturedUpdate = defineUpdate<SnapshotStatus>('captured');

/**
 * One snapshot's life: copy the source sandbox's files on its node, record the outcome, then hold
 * the files until the snapshot is deleted, and remove them. Every step is an activity, so a
 * worker killed at any point resumes here.
 */
export async function snapshotLifecycle(input: SnapshotLifecycleInput): Promise<void> {
  const { key } = input;
  upsertSearchAttributes({ HangarWorkspace: [key.workspace], HangarResourceKind: ['snapshot'], HangarResourceName: [key.name] });
  const control = proxyActivities<SnapshotControlActivities>({ startToCloseTimeout: '30s', retry: { initialInterval: '200ms', maximumInterval: '10s' } });
  const node = proxyActivities<SnapshotNodeActivities>({
    taskQueue: input.nodeQueue,
    // A copy takes as long as the files are large; the heartbeat tells a dead worker apart.
    startToCloseTimeout: '1h',
    heartbeatTimeout: '5s',
    retry: { initialInterval: '200ms', maximumInterval: '10s', maximumAttempts: 10 },
  });
  let deleting = input.phase === 'delete';
  let outcome: SnapshotStatus | undefined = deleting ? 'failed' : input.phase === 'stored' ? 'ready' : undefined;
  setHandler(deleteSnapshotSignal, () => {
    deleting = true;
  });
  setHandler(capturedUpdate, async () => {
    await condition(() => outcome !== undefined);
    return outcome!;
  });

  // When the capture ended; histories from before the activity answered it hold none.
  let capturedAt: number | undefined;
  if (!deleting && outcome === undefined) {
    try {
      capturedAt = await node.captureSandboxFiles(input.sourceId, key.id);
      outcome = 'ready';
    } catch (err) {
      await control.markSnapshotFailed(key.id, `capture failed: ${failureReason(err)}`);
      outcome = 'failed';
    }
  }
  if (!deleting && outcome === 'ready' && patched(STORAGE_METERING_PATCH)) {
    // Billed from the capture's end (or where the previous run stopped) to the deletion: the
    // node may have settled the capture well before this workflow heard of it.
    let meteredUntil = input.meteredUntil ?? capturedAt ?? Date.now();
    while (!(await condition(() => deleting, METER_INTERVAL_MS))) {
      const now = Date.now();
      await control.recordSnapshotUsage(key, meteredUntil, now);
      meteredUntil = now;
      if (workflowInfo().historyLength > MAX_HISTORY_EVENTS) await continueAsNew<typeof snapshotLifecycle>({ ...input, phase: 'stored', meteredUntil });
    }
    await control.recordSnapshotUsage(key, meteredUntil, Date.now());
  }
  await condition(() => deleting);
  await control.markSnapshotDeleting(key.id);
  await node.removeSnapshotFiles(key.id);
  await control.deleteSnapshotRecord(key.id);
}
