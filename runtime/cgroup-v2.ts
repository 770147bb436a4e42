import fs from 'node:fs';
import path from 'node:path';
import { killPids, makeGroup, readControl, readKeyedCounter, readPids, removeGroups, waitUntil, writeControl } from './cgroup-files';
import type { CgroupDriver, CgroupLimits, SandboxCgroup } from './cgroup-driver';

const CONTROLLERS = ['memory', 'pids'];

/** cgroup v2: one unified group per sandbox, below a parent with the controllers delegated. */
export class CgroupV2Driver implements CgroupDriver {
  readonly version = 2;
  private prepared = false;

  /** @param parent folder (inside the cgroup2 mount) under which sandbox groups are created */
  constructor(private readonly parent: string) {}

  async create(sandboxId: string): Promise<SandboxCgroup> {
    if (!this.prepared) {
      await makeGroup(this.parent);
      await this.delegateControllers();
      this.prepared = true;
    }
    const dir = path.join(this.parent, sandboxId);
    await makeGroup(dir);
    return this.open([dir]);
  }

  open(dirs: string[]): SandboxCgroup {
    return new CgroupV2(dirs[0]);
  }

  /**
   * Controllers reach a group only when every ancestor lists them in cgroup.subtree_control.
   * Enabling fails with EBUSY where an ancestor holds processes (v2's "no internal processes"):
   * then limits cannot work here and the error says where.
   */
  private async delegateControllers(): Promise<void> {
    const mount = findMountRoot(this.parent);
    const chain: string[] = [];
    for (let dir = this.parent; dir.length >= mount.length; dir = path.dirname(dir)) {
      chain.unshift(dir);
      if (dir === mount) break;
    }
    for (const dir of chain) {
      const available = (await readControl(path.join(dir, 'cgroup.controllers'))).split(' ');
      const wanted = CONTROLLERS.filter((c) => available.includes(c));
      if (wanted.length === 0) continue;
      try {
        await writeControl(path.join(dir, 'cgroup.subtree_control'), wanted.map((c) => `+${c}`).join(' '));
      } catch (err) {
        throw new Error(`cannot delegate ${wanted.join(', ')} below ${dir}: ${(err as Error).message}`, { cause: err });
      }
    }
  }
}

function findMountRoot(dir: string): string {
  let root = dir;
  while (path.dirname(root) !== root && fs.existsSync(path.join(path.dirname(root), 'cgroup.controllers'))) root = path.dirname(root);
  return root;
}

class CgroupV2 implements SandboxCgroup {
  readonly dirs: string[];
  readonly procsFiles: string[];

  constructor(private readonly dir: string) {
    this.dirs = [dir];
    this.procsFiles = [path.join(dir, 'cgroup.procs')];
  }

  async setLimits(limits: CgroupLimits): Promise<void> {
    const memoryMax = path.join(this.dir, 'memory.max');
    if (!fs.existsSync(memoryMax)) throw new Error(`the memory controller is not enabled for ${this.dir}`);
    await writeControl(memoryMax, String(limits.memoryBytes));
    const swapMax = path.join(this.dir, 'memory.swap.max');
    if (fs.existsSync(swapMax)) await writeControl(swapMax, '0');
    const pidsMax = path.join(this.dir, 'pids.max');
    if (fs.existsSync(pidsMax)) await writeControl(pidsMax, String(limits.pidsMax));
  }

  pids(): Promise<number[]> {
    return readPids(this.procsFiles[0]);
  }

  async freeze(): Promise<void> {
    await writeControl(path.join(this.dir, 'cgroup.freeze'), '1');
    await waitUntil('the freezer', () => this.isFrozenNow());
  }

  async thaw(): Promise<void> {
    await writeControl(path.join(this.dir, 'cgroup.freeze'), '0');
  }

  private async isFrozenNow(): Promise<boolean> {
    return (await readKeyedCounter(path.join(this.dir, 'cgroup.events'), 'frozen')) === 1;
  }

  async isFrozen(): Promise<boolean> {
    // Asked to freeze counts as frozen, as v1's FREEZING does.
    return (await readControl(path.join(this.dir, 'cgroup.freeze'))) === '1';
  }

  async memoryUsageBytes(): Promise<number> {
    return Number(await readControl(path.join(this.dir, 'memory.current')));
  }

  oomKills(): Promise<number> {
    return readKeyedCounter(path.join(this.dir, 'memory.events'), 'oom_kill');
  }

  async destroy(): Promise<void> {
    if (!fs.existsSync(this.dir)) return;
    const killFile = path.join(this.dir, 'cgroup.kill');
    const canKillAll = fs.existsSync(killFile);
    await waitUntil('the sandbox processes to end', async () => {
      const pids = await this.pids();
      if (pids.length === 0) return true;
      if (canKillAll) await writeControl(killFile, '1');
      else killPids(pids);
      return false;
    });
    await removeGroups(this.dirs);
  }
}
