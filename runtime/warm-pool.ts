import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';

/** Warm sandboxes' ids; a resource uuid (hex) never starts so. */
const WARM_PREFIX = 'warm_';

export function isWarmId(id: string): boolean {
  return id.startsWith(WARM_PREFIX);
}

/**
 * Which warm sandboxes (started ahead of need, not yet anyone's) are ready, how many are
 * starting, and why the last one failed. Starting and ending them is the runtime's work,
 * handed in as `start` and `remove`. It fills only once told to (fill): the runtime does so when
 * the image warm sandboxes run on is on the node, so that refilling never builds it.
 */
export class WarmPool {
  private readonly ready: string[] = [];
  private starting = 0;
  /** Starts in flight: closing waits for them, as each ends its sandbox once the pool is closed. */
  private readonly inFlight = new Set<Promise<unknown>>();
  private lastError?: string;
  private closed = false;
  private filling = false;

  constructor(
    private readonly size: number,
    private readonly runtime: { start(id: string): Promise<unknown>; remove(id: string): Promise<void> },
  ) {}

  /** Keeps a warm sandbox found running (left by a previous worker) if there is room. */
  adopt(id: string): boolean {
    if (this.closed || this.ready.length >= this.size || this.ready.includes(id)) return false;
    this.ready.push(id);
    return true;
  }

  take(): string | undefined {
    return this.ready.shift();
  }

  failed(reason: string): void {
    this.lastError = reason;
  }

  /** From now on the pool keeps itself full: starts warm sandboxes now and after each take. */
  fill(): void {
    this.filling = true;
    this.refill();
  }

  /** Starts warm sandboxes in the background until the pool is full again (once filling). */
  refill(): void {
    while (this.filling && !this.closed && this.ready.length + this.starting < this.size) {
      this.starting++;
      const id = `${WARM_PREFIX}${randomBytes(6).toString('hex')}`;
      const started = this.runtime
        .start(id)
        .then(
          () => (this.closed ? this.runtime.remove(id) : void this.ready.push(id)),
          // A pool that cannot start sandboxes leaves creation to the cold path.
          (err: Error) => {
            this.failed(err.message);
            return this.runtime.remove(id);
          },
        )
        .catch(() => undefined)
        .finally(() => {
          this.starting--;
          this.inFlight.delete(started);
        });
      this.inFlight.add(started);
    }
  }

  status(): { ready: number; starting: number; lastError?: string } {
    return { ready: this.ready.length, starting: this.starting, lastError: this.lastError };
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.ready.splice(0).map((id) => this.runtime.remove(id)), ...this.inFlight]);
  }
}

/**
 * Sets the hostname inside a running sandbox's UTS namespace, entered through one of its
 * processes: a warm sandbox taken over is renamed after its new owner.
 */
export async function setHostname(sandboxPids: number[], hostname: string): Promise<void> {
  const own = fs.readlinkSync('/proc/self/ns/uts');
  const inside = sandboxPids.find((pid) => {
    try {
      return fs.readlinkSync(`/proc/${pid}/ns/uts`) !== own;
    } catch {
      return false;
    }
  });
  if (inside === undefined) throw new Error('no process of the sandbox found');
  await new Promise<void>((resolve, reject) => {
    execFile('nsenter', ['--target', String(inside), '--uts', '--', '/bin/sh', '-c', 'printf %s "$0" > /proc/sys/kernel/hostname', hostname], (err) =>
      err ? reject(new Error(`could not set the hostname: ${err.message}`)) : resolve(),
    );
  });
}
