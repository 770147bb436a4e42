import fs from 'node:fs';
import path from 'node:path';
import { isAlive } from './service-process';
import { sleep } from './timing';

/**
 * One supervisor per data folder: a second one would mistake the first one's services for
 * leftovers and stop them. The lock file holds the owner's pid and start time (pids are reused).
 */
export interface LockOptions {
  /** 0: fail at once when the folder is in use; otherwise wait that long for the owner to finish. */
  waitMs: number;
  log: (line: string) => void;
}

function startTimeOf(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function ownerOf(lockFile: string): { pid: number; startTime: string } | undefined {
  try {
    const [pid, startTime] = fs.readFileSync(lockFile, 'utf8').trim().split(' ');
    return { pid: Number(pid), startTime };
  } catch {
    return undefined;
  }
}

function ownerIsAlive(owner: { pid: number; startTime: string }): boolean {
  return isAlive(owner.pid) && startTimeOf(owner.pid) === owner.startTime;
}

/** Takes the lock of `dataDir`; returns its release function. */
export async function lockDataDir(dataDir: string, options: LockOptions): Promise<() => void> {
  fs.mkdirSync(dataDir, { recursive: true });
  const lockFile = path.join(dataDir, 'stack.lock');
  const mine = `${process.pid} ${startTimeOf(process.pid)}`;
  const deadline = Date.now() + options.waitMs;
  let lastNotice = 0;
  for (;;) {
    try {
      fs.writeFileSync(lockFile, mine, { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = ownerOf(lockFile);
    if (!owner || !ownerIsAlive(owner)) {
      fs.rmSync(lockFile, { force: true });
      continue;
    }
    if (Date.now() >= deadline) {
      throw new Error(`${dataDir} is in use by process ${owner.pid} (another hangar start or test run); stop it or use another data folder`);
    }
    if (Date.now() - lastNotice > 15_000) {
      options.log(`waiting for process ${owner.pid} to release ${dataDir}`);
      lastNotice = Date.now();
    }
    await sleep(500);
  }
  const release = () => {
    try {
      if (fs.readFileSync(lockFile, 'utf8') === mine) fs.rmSync(lockFile, { force: true });
    } catch {
      // Already gone.
    }
  };
  process.once('exit', release);
  return () => {
    process.removeListener('exit', release);
    release();
  };
}
