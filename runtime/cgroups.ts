import fs from 'node:fs';
import path from 'node:path';
import { CgroupV1Driver } from './cgroup-v1';
import { CgroupV2Driver } from './cgroup-v2';
import type { CgroupDriver } from './cgroup-driver';

export type { CgroupDriver, CgroupLimits, SandboxCgroup } from './cgroup-driver';

export interface CgroupMounts {
  /** v1 controller name -> its hierarchy's mount point. */
  v1: Map<string, string>;
  /** The cgroup2 mount, when there is one (the only hierarchy on a pure v2 host). */
  v2?: string;
}

/** Reads /proc/self/mounts-style text. */
export function parseCgroupMounts(text: string): CgroupMounts {
  const mounts: CgroupMounts = { v1: new Map() };
  for (const line of text.split('\n')) {
    const [, mountPoint, type, options] = line.split(' ');
    if (type === 'cgroup2') mounts.v2 ??= unescapeMountPath(mountPoint);
    else if (type === 'cgroup') {
      for (const option of options.split(',')) {
        if (['memory', 'freezer', 'pids'].includes(option)) mounts.v1.set(option, unescapeMountPath(mountPoint));
      }
    }
  }
  return mounts;
}

/** Reads /proc/<pid>/cgroup text: controller -> group path ('' names the v2 hierarchy). */
export function parseProcCgroup(text: string): Map<string, string> {
  const groups = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!match) continue;
    for (const controller of match[1].split(',')) groups.set(controller, match[2]);
  }
  return groups;
}

function unescapeMountPath(text: string): string {
  return text.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

export interface CgroupOptions {
  /**
   * Where sandbox groups go, as a path inside each hierarchy (for example `/hangar`). Default on
   * v1: `hangar` below the worker's own group of each controller, since that is where a
   * process may create groups even when the machine itself runs inside a limited group. Default
   * on v2: `/hangar` (v2 forbids controllers below a group that holds processes; a systemd
   * service should set Delegate=yes and point this at its delegated subtree).
   */
  parent?: string;
  /**
   * The name of the default parent's folder (`hangar`). Node workers sharing one machine each
   * need their own, since a sandbox's group is named by its id: an instance of a revision moved
   * from one to the other has the same id on both.
   */
  name?: string;
  /** Force one version; by default a pure v2 host uses v2 and every other host v1. */
  version?: 1 | 2;
}

export function detectCgroupDriver(options: CgroupOptions = {}): CgroupDriver {
  const mounts = parseCgroupMounts(fs.readFileSync('/proc/self/mounts', 'utf8'));
  const own = parseProcCgroup(fs.readFileSync('/proc/self/cgroup', 'utf8'));
  const pureV2 = mounts.v2 !== undefined && mounts.v1.size === 0;
  const version = options.version ?? (pureV2 ? 2 : 1);
  if (version === 2) {
    if (!mounts.v2) throw new Error('cgroup v2 requested but no cgroup2 filesystem is mounted');
    return new CgroupV2Driver(path.join(mounts.v2, options.parent ?? `/${options.name ?? 'hangar'}`));
  }
  const needed = ['memory', 'freezer'];
  const missing = needed.filter((controller) => !mounts.v1.has(controller));
  if (missing.length > 0) throw new Error(`cgroup v1 controllers not mounted: ${missing.join(', ')}`);
  const parents = new Map<string, string>();
  for (const [controller, mountPoint] of mounts.v1) {
    parents.set(controller, path.join(mountPoint, options.parent ?? path.join(own.get(controller) ?? '/', options.name ?? 'hangar')));
  }
  return new CgroupV1Driver(parents);
}
