import { ApplicationFailure } from '@temporalio/activity';
import type { Pool } from 'pg';
import { SandboxNotFoundError } from '../runtime/sandbox-runtime';
import { listenOn } from '../store/pg-listener';
import { SNAPSHOT_REQUESTED_CHANNEL, SandboxSnapshotStore } from '../store/sandbox-snapshots';
import { whileHeartbeating } from './support/heartbeat';

/** What a node does with snapshots' files (runtime/snapshot-files.ts through the runtime's locks). */
export interface SnapshotRuntime {
  captureFiles(sandboxId: string, snapshotId: string): Promise<number>;
  removeSnapshotFiles(snapshotId: string): Promise<void>;
}

/** The node side of a snapshot: its files. Both are idempotent, so retries after a crash are safe. */
export function createSnapshotNodeActivities({ runtime, pg }: { runtime: SnapshotRuntime; pg: Pool }) {
  const store = new SandboxSnapshotStore(pg);
  return {
    /**
     * Copies the sandbox's files into the snapshot and marks it ready with their size, in the same
     * activity: a fork waits on the capture, and the mark's announcement (NOTIFY) answers it
     * before Temporal has even heard that the activity ended. A snapshot the node already settled
     * (captureOnRequest) is not copied again. Answers when the capture ended (epoch ms), which
     * its storage is billed from.
     */
    captureSandboxFiles: (sandboxId: string, snapshotId: string): Promise<number | undefined> =>
      whileHeartbeating(async () => {
        try {
          const settled = await store.readyAt(snapshotId);
          if (settled !== undefined) return settled;
          return (await store.settle(snapshotId, { status: 'ready', sizeBytes: await runtime.captureFiles(sandboxId, snapshotId) }))?.readyAt;
        } catch (err) {
          // A sandbox that is not on this node will not appear by retrying.
          if (err instanceof SandboxNotFoundError) throw ApplicationFailure.nonRetryable('the sandbox is no longer on its node', 'SandboxNotFoundError');
          throw err;
        }
      }),
    removeSnapshotFiles: (snapshotId: string): Promise<void> => whileHeartbeating(() => runtime.removeSnapshotFiles(snapshotId)),
  };
}

export type SnapshotNodeActivities = ReturnType<typeof createSnapshotNodeActivities>;

/**
 * Begins the copy of each new snapshot of a sandbox on this node as soon as its row is announced
 * (SNAPSHOT_REQUESTED_CHANNEL), rather than when its workflow's activity arrives: the way through
 * Temporal to that activity (the start, the workflow's first task, the dispatch) took 60-90 ms on
 * 2 cores, all of it before the copy could begin. The copy and the settle are the activity's own
 * (captureFiles joins a capture under way), so the workflow stays what makes a capture happen: a
 * notice missed, or a copy begun here and cut short, leaves its activity to do it. A copy whose
 * snapshot went meanwhile (deleted, or its workflow never started) is removed again.
 */
export async function captureOnRequest({ runtime, pg, nodeQueue, log }: { runtime: SnapshotRuntime; pg: Pool; nodeQueue: string; log?: (line: string) => void }): Promise<{ close(): Promise<void> }> {
  const store = new SandboxSnapshotStore(pg);
  const underWay = new Set<Promise<void>>();
  const capture = async (snapshotId: string) => {
    const row = await store.byId(snapshotId);
    if (!row || row.node_queue !== nodeQueue || row.status !== 'pending') return;
    const sizeBytes = await runtime.captureFiles(row.source_id, row.id);
    if (!(await store.settle(row.id, { status: 'ready', sizeBytes }))) await runtime.removeSnapshotFiles(row.id);
  };
  const listening = await listenOn(pg, SNAPSHOT_REQUESTED_CHANNEL, {
    notice: (snapshotId) => {
      const copy = capture(snapshotId).catch((err: Error) => log?.(`snapshot ${snapshotId}: the early copy failed, its workflow's activity will copy (${err.message})`));
      underWay.add(copy);
      void copy.then(() => underWay.delete(copy));
    },
  });
  return {
    /** Stops listening, and answers once the copies under way have ended. */
    async close() {
      listening.close();
      await Promise.all(underWay);
    },
  };
}
