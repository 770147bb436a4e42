// The interface both cgroup drivers (cgroup-v1.ts, cgroup-v2.ts) implement; cgroups.ts picks one.

/**
 * One sandbox's control groups, behind the same small interface on cgroup v1 (a group per
 * controller: memory, freezer, pids) and v2 (one unified group).
 */
export interface SandboxCgroup {
  /** The group folders; recorded in the sandbox's state so a new worker can reopen them. */
  readonly dirs: string[];
  /** Files a process writes its own pid into to join every group (before it runs user code). */
  readonly procsFiles: string[];
  setLimits(limits: CgroupLimits): Promise<void>;
  /** Host pids of every process in the group. */
  pids(): Promise<number[]>;
  /** Resolves once every process is frozen. */
  freeze(): Promise<void>;
  thaw(): Promise<void>;
  isFrozen(): Promise<boolean>;
  memoryUsageBytes(): Promise<number>;
  oomKills(): Promise<number>;
  /** Kills every process left in the group and removes the group. */
  destroy(): Promise<void>;
}

export interface CgroupLimits {
  memoryBytes: number;
  pidsMax: number;
}

export interface CgroupDriver {
  readonly version: 1 | 2;
  create(sandboxId: string): Promise<SandboxCgroup>;
  open(dirs: string[]): SandboxCgroup;
}
