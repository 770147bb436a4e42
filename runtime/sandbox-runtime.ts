import type { FreezeState } from '../domain/sandbox/lifecycle';
import type { SandboxNetworkSpec } from '../domain/sandbox/network-policy';
import type { AgentActivity } from '../sandbox-agent/contract/service';

export type { FreezeState };

/** What the runtime needs to start one sandbox on this node. */
export interface RuntimeSandboxSpec {
  /** Unique on the node; becomes the hostname and the cgroup's name. */
  id: string;
  workspaceId: string;
  /** Shown to callbacks as `sandbox`; defaults to the id. */
  name?: string;
  image: string;
  memoryMb: number;
  envs: { name: string; value: string }[];
  volumes: RuntimeVolumeMount[];
  /**
   * Host folder of code the sandbox sees read-only at /app (a workload's bundle). Linked into
   * the sandbox's own folder at each start rather than mounted, so a warm sandbox, started
   * before anyone knew the code, can take it over.
   */
  code?: string;
  /**
   * A snapshot (its id) whose files become the sandbox's writable layer at its first start:
   * a fork. A later start keeps the files the sandbox has.
   */
  seedSnapshotId?: string;
  /**
   * Outbound network and its policy (`spec.network`). Only on a node with sandbox networking,
   * and not with `internet: false`: there, and on other nodes, the sandbox has loopback only.
   */
  network?: SandboxNetworkSpec;
}

export interface RuntimeVolumeMount {
  /** Folder on this node holding the volume's files. */
  hostPath: string;
  /** Absolute path inside the sandbox. */
  mountPath: string;
  readOnly: boolean;
}

/** `running`: serving; `frozen`: in standby; `stopped`: no process left (its files remain). */
export type RuntimeSandboxState = 'running' | 'frozen' | 'stopped';

export interface SandboxHandle {
  id: string;
  workspaceId: string;
  /** Unix socket of the sandbox's API, on this node. */
  socketPath: string;
  /** Host pid of the sandbox's outermost process (bubblewrap). */
  pid: number;
  startedAt: string;
}

export interface SandboxStatus {
  id: string;
  workspaceId: string;
  state: RuntimeSandboxState;
  socketPath: string;
  pid?: number;
  startedAt?: string;
  memoryMb: number;
  /** Memory charged to the sandbox's cgroup right now (undefined when stopped). */
  memoryUsageBytes?: number;
  /** Processes the kernel killed for exceeding the memory limit since the sandbox started. */
  oomKills?: number;
  /** Its outbound network, when it has one: its address and the bytes its egress carried (see SandboxNetwork.trafficOf). */
  network?: { address: string; bytesOut: number; bytesIn: number };
}

/** What the sandbox's own API reports about its use, for the idle timer. */
/** What the sandbox's agent says of its use (GET /internal/activity). */
export type SandboxActivity = AgentActivity;

/** How a sandbox ended on this node: when it stopped, and its freeze state at that moment. */
export interface SandboxRemoval {
  /** Node clock, when its processes were gone. */
  stoppedAt: number;
  /** Its last freeze state (with any thaw no one signalled); absent when it was not running. */
  freeze?: FreezeState;
}

export interface SandboxRuntime {
  /** Starts the sandbox, or returns it when it already runs; resolves once its API answers. */
  start(spec: RuntimeSandboxSpec): Promise<SandboxHandle>;
  /** Gives the sandbox new environment variables, for the processes started from now on (it keeps running, frozen or not). */
  updateEnvs(id: string, envs: RuntimeSandboxSpec['envs']): Promise<void>;
  /** A new network policy for the running sandbox, from its next connection on (`internet` cannot change). */
  updateNetwork(id: string, network: RuntimeSandboxSpec['network']): Promise<void>;
  /** Ends every process of the sandbox; its files stay for a later start. */
  stop(id: string): Promise<void>;
  /** Stops the sandbox and deletes its files; answers how it ended (the same when asked again). */
  remove(id: string): Promise<SandboxRemoval>;
  /** Freezes the sandbox (a no-op when frozen); answers the freeze that holds it. */
  freeze(id: string): Promise<FreezeState>;
  /** Thaws the sandbox (a no-op when running); answers the generation it runs in. */
  thaw(id: string): Promise<FreezeState>;
  freezeState(id: string): Promise<FreezeState>;
  isFrozen(id: string): Promise<boolean>;
  status(id: string): Promise<SandboxStatus | undefined>;
  list(): Promise<SandboxStatus[]>;
  activity(id: string): Promise<SandboxActivity>;
  socketPath(id: string): string;
}

/** The caller asked for something the runtime cannot do with this input (never retried). */
export class SandboxSpecError extends Error {
  override name = 'SandboxSpecError';
}

export class SandboxNotFoundError extends Error {
  override name = 'SandboxNotFoundError';
  constructor(readonly sandboxId: string) {
    super(`sandbox '${sandboxId}' does not exist on this node`);
  }
}

/** The sandbox did not come up; the message says why (the agent's last output when it has any). */
export class SandboxStartError extends Error {
  override name = 'SandboxStartError';
}
