import fs from 'node:fs';

/**
 * A pid alone may be reused after a process ends; the pid with its start time (field 22 of
 * /proc/<pid>/stat, in clock ticks since boot) names one process for good.
 */
export function processStartTicks(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after its end.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z') return undefined;
    return Number(fields[19]);
  } catch {
    return undefined;
  }
}

export function isSameProcess(pid: number, startTicks: number): boolean {
  return processStartTicks(pid) === startTicks;
}
