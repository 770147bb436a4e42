import { ApplicationFailure } from '@temporalio/activity';
import type { Pool } from 'pg';
import { SandboxNotFoundError } from '../runtime/sandbox-runtime';
import { SandboxSnapshotStore } from '../store/sandbox-snapshots';
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
     * before Temporal has even heard that the activity ended.
     */
    captureSandboxFiles: (sandboxId: string, snapshotId: string): Promise<void> =>
      whileHeartbeating(async () => {
        try {
          await store.settle(snapshotId, { status: 'ready', sizeBytes: await runtime.captureFiles(sandboxId, snapshotId) });
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
