import fs from 'node:fs';
import path from 'node:path';
import { SandboxSpecError } from './sandbox-runtime';

/**
 * Where one sandbox keeps its things on the node. Everything lives under
 * `<dataDir>/sandboxes/<id>/` on disk (not tmpfs), so a user's files survive standby, a restart
 * of the sandbox and a restart of the worker; deleting the folder deletes the sandbox's data.
 */
export interface SandboxLayout {
  root: string;
  /** The runtime's record of the sandbox (spec, pids, cgroups): read back by a new worker. */
  stateFile: string;
  /** The agent's stdout and stderr. */
  agentLog: string;
  /** Per-sandbox files of /etc (hosts, hostname) and the agent's configuration. */
  etcDir: string;
  agentConfig: string;
  /** Shared with the sandbox at /run/hangar: the port event log (the sandbox user can write here). */
  runDir: string;
  eventLog: string;
  /**
   * Shared at /run/hangar-api: the API socket. The agent creates the socket, then the host makes
   * the folder root's, so nothing in the sandbox can swap the socket for a link to a host socket.
   */
  apiDir: string;
  socketPath: string;
  /**
   * Shared at /run/hangar-platform: the platform socket, served by the node worker (the thread
   * store, allow-listed egress). Root's from the start: the sandbox may connect, never replace it.
   */
  platformDir: string;
  platformSocket: string;
  /** Host-side progress of the port event relay through the event log. */
  relayCursor: string;
  /** The writable layer: one host folder per writable folder of the sandbox's tree, all under `fsRoot`. */
  writable: WritableFolder[];
  fsRoot: string;
  /**
   * On a stored image, the upper layer of the overlay that is the sandbox's root (root-overlay.ts):
   * what it wrote anywhere outside its own folders, under `fsRoot` so snapshots, forks, restores
   * and metering carry it with the rest of the layer.
   */
  upperDir: string;
  /** The overlay's work folder (same file system as the upper layer; nothing in it is kept). */
  overlayWorkDir: string;
  /** Where the launcher mounts the overlay, in a mount namespace of its own: empty on the host. */
  overlayMountPoint: string;
  /** Seen read-only at /app: the code the spec names, linked in at each start (empty without). */
  codeDir: string;
}

export interface WritableFolder {
  hostPath: string;
  sandboxPath: string;
  /** Sticky world-writable (tmp folders) rather than owned by the sandbox user. */
  shared: boolean;
}

/** Inside the sandbox. */
export const SANDBOX_RUN_DIR = '/run/hangar';
export const SANDBOX_API_DIR = '/run/hangar-api';
export const SANDBOX_SOCKET = `${SANDBOX_API_DIR}/agent.sock`;
export const SANDBOX_PLATFORM_DIR = '/run/hangar-platform';
export const SANDBOX_PLATFORM_SOCKET = `${SANDBOX_PLATFORM_DIR}/platform.sock`;
export const SANDBOX_EVENT_LOG = `${SANDBOX_RUN_DIR}/port-events.jsonl`;
export const SANDBOX_AGENT_CONFIG = '/etc/hangar/agent.json';
export const SANDBOX_HOME = '/home/user';
export const SANDBOX_WORKSPACE = '/workspace';
export const SANDBOX_CODE_DIR = '/app';

const WRITABLE_FOLDERS: { name: string; sandboxPath: string; shared: boolean }[] = [
  { name: 'home', sandboxPath: SANDBOX_HOME, shared: false },
  { name: 'workspace', sandboxPath: SANDBOX_WORKSPACE, shared: false },
  { name: 'tmp', sandboxPath: '/tmp', shared: true },
  { name: 'var-tmp', sandboxPath: '/var/tmp', shared: true },
];

// A hostname label allows 63 characters; the id is also a file and cgroup name.
const SANDBOX_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

export function assertSandboxId(id: string): void {
  if (typeof id !== 'string' || !SANDBOX_ID.test(id)) {
    throw new SandboxSpecError(`id must be 1-63 letters, digits, '-' or '_' starting with a letter or digit, got '${id}'`);
  }
}

export function sandboxesDir(dataDir: string): string {
  return path.join(dataDir, 'sandboxes');
}

export function sandboxLayout(dataDir: string, id: string): SandboxLayout {
  assertSandboxId(id);
  const root = path.join(sandboxesDir(dataDir), id);
  const runDir = path.join(root, 'run');
  const apiDir = path.join(root, 'api');
  const etcDir = path.join(root, 'etc');
  const platformDir = path.join(root, 'platform');
  return {
    root,
    stateFile: path.join(root, 'state.json'),
    agentLog: path.join(root, 'agent.log'),
    etcDir,
    agentConfig: path.join(etcDir, 'agent.json'),
    runDir,
    eventLog: path.join(runDir, path.basename(SANDBOX_EVENT_LOG)),
    apiDir,
    socketPath: path.join(apiDir, path.basename(SANDBOX_SOCKET)),
    platformDir,
    platformSocket: path.join(platformDir, path.basename(SANDBOX_PLATFORM_SOCKET)),
    relayCursor: path.join(root, 'relay-cursor'),
    codeDir: path.join(root, 'code'),
    fsRoot: path.join(root, 'fs'),
    upperDir: path.join(root, 'fs', 'upper'),
    overlayWorkDir: path.join(root, 'overlay-work'),
    overlayMountPoint: path.join(root, 'root'),
    writable: WRITABLE_FOLDERS.map((folder) => ({
      hostPath: path.join(root, 'fs', folder.name),
      sandboxPath: folder.sandboxPath,
      shared: folder.shared,
    })),
  };
}

/** Where the node pins the sockets of its workload instances (`<sandbox id>-<port>.sock`), which its listener serves. */
export function workloadSocketsDir(dataDir: string): string {
  return path.join(dataDir, 'workload-sockets');
}

const SNAPSHOT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The snapshots whose files are on the node (their folders under `snapshots/`, those being removed aside). */
export function storedSnapshotIds(dataDir: string): string[] {
  const folder = path.join(dataDir, 'snapshots');
  return fs.existsSync(folder) ? fs.readdirSync(folder).filter((name) => SNAPSHOT_ID.test(name)) : [];
}

/** Where a snapshot's copy of a sandbox's writable layer lives on the node. */
export function snapshotFilesDir(dataDir: string, snapshotId: string): string {
  if (typeof snapshotId !== 'string' || !SNAPSHOT_ID.test(snapshotId)) throw new SandboxSpecError(`a snapshot id is a lowercase uuid, got '${snapshotId}'`);
  return path.join(dataDir, 'snapshots', snapshotId, 'fs');
}
