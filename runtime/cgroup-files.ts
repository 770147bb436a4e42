import fs from 'node:fs/promises';

/** Small helpers over cgroup control files, shared by the v1 and v2 drivers. */

/** The cgroup was removed: its file is gone (ENOENT), or went while being read (ENODEV). */
const isRemovedCgroup = (err: unknown) => ['ENOENT', 'ENODEV'].includes((err as NodeJS.ErrnoException).code ?? '');

export async function readControl(file: string): Promise<string> {
  return (await fs.readFile(file, 'utf8')).trim();
}

export async function writeControl(file: string, value: string): Promise<void> {
  await fs.writeFile(file, value);
}

export async function readPids(procsFile: string): Promise<number[]> {
  try {
    const text = await readControl(procsFile);
    return text ? text.split('\n').map(Number) : [];
  } catch (err) {
    if (isRemovedCgroup(err)) return [];
    throw err;
  }
}

/** Reads `key value` lines (memory.events, memory.oom_control, cgroup.events). */
export async function readKeyedCounter(file: string, key: string): Promise<number> {
  try {
    const match = new RegExp(`^${key} (\\d+)$`, 'm').exec(await readControl(file));
    return match ? Number(match[1]) : 0;
  } catch (err) {
    if (isRemovedCgroup(err)) return 0;
    throw err;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `check` holds; cgroup state changes (freezing, exits) land within milliseconds. */
export async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 0.5; ; delay = Math.min(delay * 2, 20)) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(delay);
  }
}

export function killPids(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
}

/** Removes group folders, deepest first; a group empties a moment after its last process dies. */
export async function removeGroups(dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    await waitUntil(`removal of ${dir}`, async () => {
      try {
        await fs.rmdir(dir);
        return true;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return true;
        if (code === 'EBUSY') return false;
        throw err;
      }
    });
  }
}

export async function makeGroup(dir: string): Promise<void> {
  await fs.mkdir(dir, { recursive: true });
}
