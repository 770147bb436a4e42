import { randomUUID } from 'node:crypto';
import fsp from 'node:fs/promises';
import { formatPortEvent, type PortEvent } from './contract/port-events';
import { processTable, processTree, socketInodes, tcpSockets } from './proc';

export interface PortMonitorOptions {
  eventLog: string;
  /** The sandbox's name, as callbacks receive it. */
  sandbox: string;
  /** Time between two scans of the listening sockets. */
  intervalMs?: number;
}

/**
 * Watches monitored processes (and their descendants) for TCP ports they start listening on,
 * and appends one event per new port to the event log, which the host delivers. Ports already
 * listening when monitoring starts are reported too: a server that won the race with the
 * monitor request still gets its callback. A port closed and opened again is reported again.
 */
export class PortMonitor {
  private readonly monitors = new Map<number, { callback: string; listening: Set<number> }>();
  private timer?: NodeJS.Timeout;
  private log?: fsp.FileHandle;
  private readonly intervalMs: number;

  constructor(private readonly options: PortMonitorOptions) {
    this.intervalMs = options.intervalMs ?? 100;
  }

  /** Starts (or re-targets) monitoring; the first scan runs before this resolves. */
  async start(pid: number, callback: string): Promise<void> {
    const existing = this.monitors.get(pid);
    this.monitors.set(pid, { callback, listening: existing?.listening ?? new Set() });
    await this.scanAndSchedule();
  }

  stop(pid: number): boolean {
    return this.monitors.delete(pid);
  }

  isMonitoring(pid: number): boolean {
    return this.monitors.has(pid);
  }

  private async scanAndSchedule(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    try {
      await this.scan();
    } catch (err) {
      process.stderr.write(`port monitor: ${(err as Error).message}\n`);
    }
    if (this.monitors.size > 0 && !this.timer) this.timer = setTimeout(() => void this.scanAndSchedule(), this.intervalMs);
  }

  private async scan(): Promise<void> {
    if (this.monitors.size === 0) return;
    const [table, sockets] = await Promise.all([processTable(), tcpSockets()]);
    const listeningByInode = new Map(sockets.filter((s) => s.state === 'LISTEN').map((s) => [s.inode, s.port]));
    const detectedAt = new Date().toISOString();
    const events: PortEvent[] = [];
    for (const [pid, monitor] of this.monitors) {
      const entry = table.get(pid);
      if (!entry || entry.state === 'Z') {
        this.monitors.delete(pid);
        continue;
      }
      const inodes = await socketInodes(processTree(pid, table));
      const ports = new Set<number>();
      for (const inode of inodes) {
        const port = listeningByInode.get(inode);
        if (port !== undefined) ports.add(port);
      }
      for (const port of ports) {
        if (!monitor.listening.has(port)) {
          events.push({ key: randomUUID(), callback: monitor.callback, pid, port, sandbox: this.options.sandbox, detectedAt });
        }
      }
      monitor.listening = ports;
    }
    if (events.length > 0) await this.append(events);
  }

  /** Written and synced before the scan counts the ports as reported: a crash re-reports rather than loses. */
  private async append(events: PortEvent[]): Promise<void> {
    try {
      this.log ??= await fsp.open(this.options.eventLog, 'a', 0o600);
      await this.log.appendFile(events.map(formatPortEvent).join(''));
      await this.log.datasync();
    } catch (err) {
      for (const event of events) this.monitors.get(event.pid)?.listening.delete(event.port);
      throw err;
    }
  }
}
