/** A busy resource tells its workflow it is in use at most this often. */
export const TOUCH_INTERVAL_MS = 2_000;
const MAX_TRACKED = 10_000;

/** Several touches per idle period, so a resource in use is never taken for idle. */
export function touchIntervalMs(idleSeconds: number): number {
  return Math.max(100, Math.min(TOUCH_INTERVAL_MS, (idleSeconds * 1000) / 4));
}

/**
 * How a gateway tells a resource's lifecycle workflow that it serves requests, so the workflow's
 * idle timer (standby, scale to zero) starts over: a `touch` signal per workflow at most once per
 * interval, and repeated while requests are in flight, so a long stream is never taken for
 * idleness. Signals are fire-and-forget: a lost one only shortens the idle period.
 */
export class WorkflowTouches {
  private readonly lastSignal = new Map<string, number>();
  private readonly inflight = new Map<string, { requests: number; timer: NodeJS.Timeout }>();

  constructor(
    private readonly send: (workflowId: string, signal: string, at: number, generation?: number) => Promise<void>,
    private readonly onError: (workflowId: string, signal: string, err: Error) => void,
    private readonly intervalMs = TOUCH_INTERVAL_MS,
  ) {}

  /** Sends `signal` now, unthrottled (e.g. `resumed`); it counts as a touch. */
  signal(workflowId: string, signal: string): void {
    const at = Date.now();
    this.noted(workflowId, at);
    this.send(workflowId, signal, at).catch((err) => this.onError(workflowId, signal, err as Error));
  }

  /** Sends `resumed` now: the sandbox thawed `at` (node clock) into freeze generation `generation`. */
  resumed(workflowId: string, at: number, generation: number): void {
    this.noted(workflowId);
    this.send(workflowId, 'resumed', at, generation).catch((err) => this.onError(workflowId, 'resumed', err as Error));
  }

  /** Signals `touch` unless the workflow heard from this gateway within the interval. */
  touch(workflowId: string): void {
    if (Date.now() - (this.lastSignal.get(workflowId) ?? 0) >= this.intervalMs) this.signal(workflowId, 'touch');
  }

  /** The workflow learnt of a use some other way (it was just woken): no touch is due for it yet. */
  noted(workflowId: string, at = Date.now()): void {
    if (this.lastSignal.size >= MAX_TRACKED && !this.lastSignal.has(workflowId)) this.lastSignal.clear();
    this.lastSignal.set(workflowId, at);
  }

  /** A request starts: touches now if due, and every interval until the returned release is called. */
  hold(workflowId: string): () => void {
    this.touch(workflowId);
    const entry = this.inflight.get(workflowId) ?? { requests: 0, timer: setInterval(() => this.touch(workflowId), this.intervalMs).unref() };
    this.inflight.set(workflowId, entry);
    entry.requests++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // The last touch is at most an interval old: the idle period counts from about here.
      if (--entry.requests === 0) {
        clearInterval(entry.timer);
        this.inflight.delete(workflowId);
      }
    };
  }

  close(): void {
    for (const { timer } of this.inflight.values()) clearInterval(timer);
    this.inflight.clear();
  }
}
