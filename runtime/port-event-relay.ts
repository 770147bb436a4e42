import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { parsePortEvent, type PortEvent } from '../sandbox-agent/contract/port-events';
import { writeFileAtomically } from './atomic-file';
import { sandboxLayout, sandboxesDir } from './layout';

/**
 * Starts the durable delivery of one event; 'duplicate' when a delivery of the same event was
 * started before (the worker gives the relay one that starts a Temporal workflow: the runtime
 * does not know about orchestration).
 */
export type StartPortCallback = (sandboxId: string, event: PortEvent) => Promise<'started' | 'duplicate'>;

export interface PortEventRelayOptions {
  dataDir: string;
  startDelivery: StartPortCallback;
  /** Fallback scan period; file-change notifications make the usual case immediate. */
  pollMs?: number;
  /** Deliveries started per sandbox per poll period: a sandbox flooding its log cannot flood Temporal. */
  maxEventsPerPoll?: number;
  onError?: (sandboxId: string, err: Error) => void;
}

interface Followed {
  watcher?: fs.FSWatcher;
  busy: boolean;
  /** More to read after the current pass. */
  again: boolean;
  /** Deliveries this sandbox may still start until the next poll. */
  budget: number;
}

/** The log is read in pieces of at most this size. */
const READ_CHUNK = 256 * 1024;

/**
 * Host side of port callbacks: follows the event log of every sandbox on this node and starts
 * one durable delivery per event. Its progress through each log is kept on the host (out of
 * the sandbox's reach) after the workflows started; a relay that crashed in between re-reads
 * a few events and the delivery refuses the duplicates (its key is sandbox + event key).
 */
export class PortEventRelay {
  private readonly watched = new Map<string, Followed>();
  private timer?: NodeJS.Timeout;
  private closed = false;
  /** Deliveries started, refused as already started, and log lines that were no valid event. */
  readonly stats = { started: 0, duplicates: 0, skipped: 0 };

  constructor(private readonly options: PortEventRelayOptions) {}

  /** Starts following every sandbox of the node, now and as they appear. */
  start(): void {
    void this.tick();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    for (const entry of this.watched.values()) entry.watcher?.close();
    this.watched.clear();
  }

  /** Reads whatever new events the sandbox's log holds now (also used by start's scans). */
  async drain(sandboxId: string): Promise<void> {
    const entry = this.entry(sandboxId);
    if (entry.busy) {
      entry.again = true;
      return;
    }
    entry.busy = true;
    try {
      do {
        entry.again = false;
        await this.relay(sandboxId);
      } while (entry.again && !this.closed);
    } catch (err) {
      this.options.onError?.(sandboxId, err as Error);
    } finally {
      entry.busy = false;
    }
  }

  private async tick(): Promise<void> {
    if (this.closed) return;
    try {
      const ids = await fsp.readdir(sandboxesDir(this.options.dataDir)).catch(() => [] as string[]);
      for (const [id, entry] of this.watched) {
        if (!ids.includes(id)) {
          entry.watcher?.close();
          this.watched.delete(id);
        } else entry.budget = this.maxEventsPerPoll();
      }
      await Promise.all(ids.map((id) => this.follow(id)));
    } finally {
      if (!this.closed) this.timer = setTimeout(() => void this.tick(), this.options.pollMs ?? 1_000);
    }
  }

  private async follow(sandboxId: string): Promise<void> {
    let layout;
    try {
      layout = sandboxLayout(this.options.dataDir, sandboxId);
    } catch {
      return;
    }
    const entry = this.entry(sandboxId);
    if (!entry.watcher && fs.existsSync(layout.runDir)) {
      try {
        entry.watcher = fs.watch(layout.runDir, () => void this.drain(sandboxId));
        entry.watcher.on('error', () => {
          entry.watcher?.close();
          entry.watcher = undefined;
        });
      } catch {
        // Not watchable (folder going away): the periodic scan still covers it.
      }
    }
    await this.drain(sandboxId);
  }

  private entry(sandboxId: string): Followed {
    let entry = this.watched.get(sandboxId);
    if (!entry) {
      entry = { busy: false, again: false, budget: this.maxEventsPerPoll() };
      this.watched.set(sandboxId, entry);
    }
    return entry;
  }

  private maxEventsPerPoll(): number {
    return this.options.maxEventsPerPoll ?? 100;
  }

  private async relay(sandboxId: string): Promise<void> {
    const entry = this.entry(sandboxId);
    const layout = sandboxLayout(this.options.dataDir, sandboxId);
    // The log sits where the sandbox user writes: never follow a link, never block on a FIFO.
    const handle = await fsp.open(layout.eventLog, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK).catch(() => undefined);
    if (!handle) return;
    let chunk: Buffer;
    let offset: number;
    let size: number;
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) return;
      size = stats.size;
      offset = await readCursor(layout.relayCursor);
      // A log shorter than our position was replaced: start over (duplicates are refused anyway).
      if (offset > size) offset = 0;
      if (offset === size) return;
      const buffer = Buffer.alloc(Math.min(READ_CHUNK, size - offset));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
      chunk = buffer.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
    // Lines are cut at '\n' bytes, which never occur inside a UTF-8 character.
    const text = chunk.toString('latin1');
    let consumed = 0;
    for (;;) {
      const end = text.indexOf('\n', consumed);
      // Only whole lines: the agent may be halfway through writing the last one. Past the
      // budget, the rest waits for the next poll.
      if (end < 0 || entry.budget <= 0) break;
      const event = parsePortEvent(Buffer.from(text.slice(consumed, end), 'latin1').toString('utf8'));
      if (event) {
        await this.startDelivery(sandboxId, event);
        entry.budget--;
      } else if (end > consumed) this.stats.skipped++;
      consumed = end + 1;
    }
    // A "line" filling a whole chunk is no event the agent wrote: skip it rather than stall on it.
    if (consumed === 0 && chunk.length === READ_CHUNK) consumed = chunk.length;
    if (consumed > 0) await writeCursor(layout.relayCursor, offset + consumed);
    if (entry.budget > 0 && consumed === chunk.length && offset + consumed < size) entry.again = true;
  }

  private async startDelivery(sandboxId: string, event: PortEvent): Promise<void> {
    const outcome = await this.options.startDelivery(sandboxId, event);
    if (outcome === 'started') this.stats.started++;
    else this.stats.duplicates++;
  }
}

async function readCursor(file: string): Promise<number> {
  const text = await fsp.readFile(file, 'utf8').catch(() => '0');
  const offset = Number(text.trim());
  return Number.isSafeInteger(offset) && offset >= 0 ? offset : 0;
}

async function writeCursor(file: string, offset: number): Promise<void> {
  await writeFileAtomically(file, String(offset));
}
