import fs from 'node:fs';
import { statFields } from '../../scripts/stack/service-process';

/**
 * CPU time so far (ms) of the processes `pids`, all their threads included, from the scheduler's
 * own accounting (/proc/<pid>/task/<tid>/schedstat, nanoseconds; utime/stime only have 10 ms
 * ticks). A process gone meanwhile counts nothing.
 */
export function processCpuMs(pids: number[]): number {
  let ns = 0;
  for (const pid of pids) {
    let tids: string[];
    try {
      tids = fs.readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      try {
        ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // The thread ended meanwhile.
      }
    }
  }
  return ns / 1e6;
}

/** CPU time (ms) the whole machine spent busy so far, every core and the kernel's own work included. */
export function machineBusyMs(): number {
  const fields = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: not idle, iowait, nor steal (another VM's).
  const busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6];
  return (busy * 1000) / CLOCK_TICKS;
}

/** USER_HZ: 100 on every Linux architecture Node runs on. */
const CLOCK_TICKS = 100;

/**
 * CPU time so far (ms) of the processes `pids` and of their children that have ended, from the
 * kernel's per-process totals (/proc/<pid>/stat, 10 ms ticks): utime and stime, with cutime and
 * cstime, which a parent gains as it reaps a child. Unlike processCpuMs, threads that ended still
 * count (ClickHouse's short-lived worker threads), and so do processes (a database backend whose
 * connection closed): pass whole process trees.
 */
export function processTotalCpuMs(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    const fields = statFields(pid);
    // utime, stime, cutime, cstime; a process gone counts nothing here, but in its parent's cutime.
    if (fields) ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
  }
  return (ticks * 1000) / CLOCK_TICKS;
}

/**
 * CPU meter over named sets of processes: `take()` snapshots each set's CPU time (and the
 * machine's), `since(snapshot)` gives what each spent in between. Sets are resolved at every
 * snapshot, so processes forked meanwhile (database backends) are counted from when first seen.
 */
export class CpuMeter {
  constructor(private readonly sets: Record<string, () => number[]>) {}

  take(): Record<string, number> {
    const snapshot: Record<string, number> = { machine: machineBusyMs() };
    for (const [name, pids] of Object.entries(this.sets)) snapshot[name] = processTotalCpuMs(pids());
    return snapshot;
  }

  since(before: Record<string, number>): Record<string, number> {
    const now = this.take();
    return Object.fromEntries(Object.keys(now).map((name) => [name, now[name] - (before[name] ?? 0)]));
  }
}
