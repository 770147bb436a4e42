import type { Pool } from 'pg';
import { listenOn, type PgListening } from '../../../store/pg-listener';
import { SNAPSHOT_SETTLED_CHANNEL } from '../../../store/sandbox-snapshots';

/** One awaited capture: `settled` resolves when its outcome is announced; `done` stops waiting. */
export interface AwaitedCapture {
  settled: Promise<void>;
  done(): void;
}

/**
 * The captures this API process waits on, answered by the node's announcement of their outcome
 * (SandboxSnapshotStore.settle's NOTIFY), which comes a Temporal round trip before the capture's
 * workflow hears the activity end: one LISTEN connection for them all, opened at the first
 * capture. Only a shortcut: a caller also waits on the workflow, which answers when the
 * database cannot be listened on or a notice was missed (a connection lost meanwhile).
 */
export class CaptureNotices {
  private readonly waiting = new Map<string, () => void>();
  private listening?: Promise<PgListening | undefined>;
  private closed = false;

  constructor(private readonly pg: Pool) {}

  /** Listens first (a notice sent once this answers is heard), then waits for the snapshot's. */
  async expect(snapshotId: string): Promise<AwaitedCapture> {
    await this.listen();
    let resolve!: () => void;
    const settled = new Promise<void>((done) => (resolve = done));
    this.waiting.set(snapshotId, resolve);
    return { settled, done: () => this.waiting.delete(snapshotId) };
  }

  async close(): Promise<void> {
    this.closed = true;
    (await this.listening)?.close();
  }

  private listen(): Promise<PgListening | undefined> {
    this.listening ??= listenOn(this.pg, SNAPSHOT_SETTLED_CHANNEL, { notice: (id) => this.notified(id) }).then(
      (listening) => {
        if (this.closed) listening.close();
        return listening;
      },
      () => {
        // The next capture tries again; this one has the workflow's answer.
        this.listening = undefined;
        return undefined;
      },
    );
    return this.listening;
  }

  private notified(snapshotId: string): void {
    const resolve = this.waiting.get(snapshotId);
    this.waiting.delete(snapshotId);
    resolve?.();
  }
}
