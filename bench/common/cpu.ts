import fs from 'node:fs';

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
