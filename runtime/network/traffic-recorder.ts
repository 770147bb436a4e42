import type { Pool } from 'pg';
import { ResourceStore } from '../../store/resources';

/** How often counted bytes are added to the sandboxes' rows: what a worker killed outright can lose. */
const FLUSH_EVERY_MS = 2_000;
const RESOURCE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Bytes in and out of each sandbox's egress, added to the sandbox's row in PostgreSQL
 * (`state.network`) every couple of seconds and when the worker stops, where the API reads them.
 * Totals live in the database, not in the worker: a node worker restarting starts counting from
 * zero and its counts add to what the previous one recorded.
 */
export class TrafficRecorder {
  private readonly store: ResourceStore;
  private pending = new Map<string, { bytesOut: number; bytesIn: number }>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(pg: Pool, private readonly log: (line: string) => void = console.warn) {
    this.store = new ResourceStore(pg);
    this.timer = setInterval(() => void this.flush(), FLUSH_EVERY_MS);
    this.timer.unref();
  }

  /** Counts bytes a sandbox's connection carried (SandboxNetworkOptions.onTraffic). */
  readonly record = (sandboxId: string, bytesOut: number, bytesIn: number): void => {
    // Warm sandboxes and the runtime's own tests have ids that are no resource's.
    if (!RESOURCE_ID.test(sandboxId)) return;
    const counts = this.pending.get(sandboxId) ?? { bytesOut: 0, bytesIn: 0 };
    counts.bytesOut += bytesOut;
    counts.bytesIn += bytesIn;
    this.pending.set(sandboxId, counts);
  };

  /** Adds what was counted since the last flush to the rows; what fails to be added is kept for the next. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      const batch = [...this.pending].map(([id, counts]) => ({ id, ...counts }));
      this.pending = new Map();
      try {
        await this.store.addSandboxTraffic(batch);
      } catch (err) {
        this.log(`could not record the traffic of ${batch.length} sandboxes (kept for the next try): ${(err as Error).message}`);
        for (const { id, bytesOut, bytesIn } of batch) this.record(id, bytesOut, bytesIn);
      }
    });
    return this.flushing;
  }

  /** Stops the timer and records what is left (after the egress services have closed). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
