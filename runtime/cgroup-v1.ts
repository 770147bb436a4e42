import fs from 'node:fs';
import path from 'node:path';
import { killPids, makeGroup, readControl, readKeyedCounter, readPids, removeGroups, waitUntil, writeControl } from './cgroup-files';
import type { CgroupDriver, CgroupLimits, SandboxCgroup } from './cgroup-driver';

type Controller = 'memory' | 'freezer' | 'pids';

const CONTROLLER_MARKERS: [Controller, string][] = [
  ['memory', 'memory.limit_in_bytes'],
  ['freezer', 'freezer.state'],
  ['pids', 'pids.max'],
];

/** cgroup v1: one group per controller, each in its own hierarchy. */
export class CgroupV1Driver implements CgroupDriver {
  readonly version = 1;

  /** @param parents controller -> folder under which sandbox groups are created */
  constructor(private readonly parents: Map<string, string>) {}

  async create(sandboxId: string): Promise<SandboxCgroup> {
    const dirs: string[] = [];
    for (const controller of ['memory', 'freezer', 'pids'] as const) {
      const parent = this.parents.get(controller);
      if (!parent) continue;
      const dir = path.join(parent, sandboxId);
      await makeGroup(dir);
      dirs.push(dir);
    }
    return this.open(dirs);
  }

  open(dirs: string[]): SandboxCgroup {
    // Recorded folders may come from a worker that ran in another group: each folder's own
    // control files say which controller it belongs to.
    const byController = new Map<Controller, string>();
    for (const dir of dirs) {
      for (const [controller, marker] of CONTROLLER_MARKERS) {
        if (fs.existsSync(path.join(dir, marker))) byController.set(controller, dir);
      }
    }
    return new CgroupV1(dirs, byController);
  }
}

class CgroupV1 implements SandboxCgroup {
  readonly procsFiles: string[];

  constructor(
    readonly dirs: string[],
    private readonly groups: Map<Controller, string>,
  ) {
    this.procsFiles = dirs.map((dir) => path.join(dir, 'cgroup.procs'));
  }

  private file(controller: Controller, name: string): string {
    const dir = this.groups.get(controller);
    if (!dir) throw new Error(`no ${controller} cgroup for this sandbox`);
    return path.join(dir, name);
  }

  async setLimits(limits: CgroupLimits): Promise<void> {
    const bytes = String(limits.memoryBytes);
    const memory = this.file('memory', 'memory.limit_in_bytes');
    // With swap accounting, memory+swap gets the same cap: a sandbox cannot swap past its limit.
    // The kernel keeps memory <= memory+swap at every step, so the order depends on the direction.
    const memsw = this.file('memory', 'memory.memsw.limit_in_bytes');
    const order = !fs.existsSync(memsw) ? [memory] : limits.memoryBytes > Number(await readControl(memory)) ? [memsw, memory] : [memory, memsw];
    for (const file of order) await writeControl(file, bytes);
    if (this.groups.has('pids')) await writeControl(this.file('pids', 'pids.max'), String(limits.pidsMax));
  }

  async pids(): Promise<number[]> {
    // Any controller's group lists the same processes: every one was joined at launch.
    const dir = this.groups.get('freezer') ?? this.groups.get('memory');
    return dir ? readPids(path.join(dir, 'cgroup.procs')) : [];
  }

  private async freezerState(): Promise<string> {
    return readControl(this.file('freezer', 'freezer.state'));
  }

  async freeze(): Promise<void> {
    await writeControl(this.file('freezer', 'freezer.state'), 'FROZEN');
    // FREEZING lasts until every task has stopped; only FROZEN means no progress is possible.
    await waitUntil('the freezer', async () => (await this.freezerState()) === 'FROZEN');
  }

  async thaw(): Promise<void> {
    await writeControl(this.file('freezer', 'freezer.state'), 'THAWED');
  }

  async isFrozen(): Promise<boolean> {
    return (await this.freezerState()) !== 'THAWED';
  }

  async memoryUsageBytes(): Promise<number> {
    return Number(await readControl(this.file('memory', 'memory.usage_in_bytes')));
  }

  oomKills(): Promise<number> {
    return readKeyedCounter(this.file('memory', 'memory.oom_control'), 'oom_kill');
  }

  async destroy(): Promise<void> {
    if (this.groups.size > 0) {
      await waitUntil('the sandbox processes to end', async () => {
        const pids = await this.pids();
        if (pids.length === 0) return true;
        killPids(pids);
        // A frozen process takes its SIGKILL only once thawed.
        if (this.groups.has('freezer')) await this.thaw();
        return false;
      });
    }
    await removeGroups(this.dirs);
  }
}
