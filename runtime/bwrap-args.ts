import path from 'node:path';
import type { ResolvedImage } from './image';
import { SANDBOX_AGENT_CONFIG, SANDBOX_API_DIR, SANDBOX_CODE_DIR, SANDBOX_HOME, SANDBOX_PLATFORM_DIR, SANDBOX_RUN_DIR, type WritableFolder } from './layout';
import type { RuntimeVolumeMount } from './sandbox-runtime';

/** Where the agent's own files appear inside every sandbox (read-only). */
export const AGENT_ROOT = '/opt/hangar';
export const AGENT_NODE = `${AGENT_ROOT}/bin/node`;
export const AGENT_ENTRY = `${AGENT_ROOT}/agent/main.js`;
/** Where a sandbox on a pulled image sees the host's loader, libraries and setpriv (host-loader.ts). */
export const AGENT_LIB = `${AGENT_ROOT}/lib`;

/** Paths a volume may not cover: the image, kernel views and the agent's own folders. */
export const RESERVED_PATHS = ['/usr', '/bin', '/sbin', '/lib', '/lib64', '/etc', '/proc', '/dev', '/sys', SANDBOX_RUN_DIR, SANDBOX_API_DIR, SANDBOX_PLATFORM_DIR, AGENT_ROOT];

export interface LaunchPlan {
  sandboxId: string;
  uid: number;
  gid: number;
  image: ResolvedImage;
  /** Per-sandbox /etc files on the host, each shown at /etc/<name> (the image has mount points). */
  etcFiles: { name: string; hostPath: string }[];
  agentConfigHostPath: string;
  writable: WritableFolder[];
  runDir: string;
  apiDir: string;
  platformDir: string;
  codeDir: string;
  volumes: RuntimeVolumeMount[];
  agent: { nodeBinary: string; agentDir: string; nodeModulesDir: string; nodeFlags: string[] };
  /** The agent's own environment (never the user's variables). */
  agentEnv: Record<string, string>;
  /** Descriptor, open in bwrap, of the seccomp filter every process of the sandbox runs under. */
  seccompFd: number;
  /**
   * Set when bubblewrap starts inside a network namespace the node made for the sandbox (its
   * outbound network): bubblewrap then keeps it instead of making an empty one.
   */
  ownNetworkNamespace?: boolean;
  /**
   * Host folder where the launcher mounted the sandbox's root overlay (stored images,
   * root-overlay.ts), bound as the sandbox's `/`; without it the root is bubblewrap's tmpfs.
   */
  rootOverlay?: string;
}

/**
 * The bubblewrap command line of one sandbox. The tree is built on a root: bubblewrap's tmpfs
 * with the image's entries bound read-only (`base`), or the sandbox's overlay of its stored image
 * (root-overlay.ts); then a synthesized /etc, the sandbox's writable folders and volumes, and the
 * agent. New pid, ipc, uts and network namespaces (loopback only, unless the node made one with
 * outbound network for it); no capabilities beyond the
 * three setpriv needs to become the sandbox user, which it then drops with the bounding set;
 * the seccomp filter of runtime/seccomp (bwrap sets no_new_privs and loads it just before
 * running setpriv, so it binds the agent and all it starts).
 * No --die-with-parent: sandboxes outlive the worker that started them.
 */
export function bwrapArguments(plan: LaunchPlan): string[] {
  const args: string[] = [
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    ...(plan.ownNetworkNamespace ? [] : ['--unshare-net']),
    '--unshare-cgroup-try',
    '--hostname',
    plan.sandboxId,
    '--new-session',
    '--clearenv',
    '--cap-drop',
    'ALL',
    ...['CAP_SETUID', 'CAP_SETGID', 'CAP_SETPCAP'].flatMap((cap) => ['--cap-add', cap]),
    '--seccomp',
    String(plan.seccompFd),
  ];
  for (const [name, value] of Object.entries(plan.agentEnv)) args.push('--setenv', name, value);

  // On a stored image the sandbox's root is its overlay (root-overlay.ts), mounted by the launcher.
  if (plan.rootOverlay) args.push('--bind', plan.rootOverlay, '/');
  // bubblewrap creates missing parents as root with mode 0700; make them traversable instead.
  // (In an overlay root the node made them beforehand: bubblewrap finds them there.)
  const present = new Set<string>(['/']);
  for (const mount of sandboxMounts(plan)) {
    for (let i = 1, parts = mount.dest.split('/'); !mount.inPlace && i < parts.length - 1; i++) {
      const parent = parts.slice(0, i + 1).join('/');
      if (!present.has(parent)) {
        args.push('--perms', '0755', '--dir', parent);
        present.add(parent);
      }
    }
    args.push(...mount.args);
    present.add(mount.dest);
  }

  args.push('--chdir', SANDBOX_HOME, '--', ...agentCommand(plan));
  return args;
}

/** One mount of a sandbox's tree: where, bubblewrap's arguments for it, and the host file or folder it shows. */
export interface SandboxMount {
  dest: string;
  args: string[];
  source?: string;
  /** Its mount point is in the mount below it (the image's /etc has them): no parents made for it. */
  inPlace?: boolean;
}

/**
 * The mounts of a sandbox's tree in the order bubblewrap makes them: the image's entries (none when
 * its root is an overlay), the kernel's views, /etc and its per-sandbox files, the writable
 * folders, the agent's sockets and files, /app, volumes (a volume at /app goes over the code).
 */
export function sandboxMounts(plan: LaunchPlan): SandboxMount[] {
  const mounts: SandboxMount[] = [];
  const add = (dest: string, args: string[], source?: string, inPlace?: boolean) => mounts.push({ dest, args, ...(source ? { source } : {}), ...(inPlace ? { inPlace } : {}) });
  for (const mount of plan.image.mounts) {
    if (mount.kind === 'ro-bind') add(mount.path, ['--ro-bind', mount.source ?? mount.path, mount.path], mount.source ?? mount.path);
    else add(mount.path, ['--symlink', mount.target, mount.path]);
  }
  add('/proc', ['--proc', '/proc']);
  add('/dev', ['--dev', '/dev']);
  add('/dev/shm', ['--perms', '1777', '--tmpfs', '/dev/shm']);
  // The image's /etc, then this sandbox's own files over the mount points it provides.
  add('/etc', ['--ro-bind', plan.image.etcDir, '/etc'], plan.image.etcDir);
  for (const file of plan.etcFiles) add(`/etc/${file.name}`, ['--ro-bind', file.hostPath, `/etc/${file.name}`], file.hostPath, true);
  add(SANDBOX_AGENT_CONFIG, ['--ro-bind', plan.agentConfigHostPath, SANDBOX_AGENT_CONFIG], plan.agentConfigHostPath, true);

  for (const folder of plan.writable) add(folder.sandboxPath, ['--bind', folder.hostPath, folder.sandboxPath], folder.hostPath);
  add(SANDBOX_RUN_DIR, ['--bind', plan.runDir, SANDBOX_RUN_DIR], plan.runDir);
  add(SANDBOX_API_DIR, ['--bind', plan.apiDir, SANDBOX_API_DIR], plan.apiDir);
  add(SANDBOX_PLATFORM_DIR, ['--bind', plan.platformDir, SANDBOX_PLATFORM_DIR], plan.platformDir);

  add(`${AGENT_ROOT}/agent`, ['--ro-bind', plan.agent.agentDir, `${AGENT_ROOT}/agent`], plan.agent.agentDir);
  add(`${AGENT_ROOT}/node_modules`, ['--ro-bind', plan.agent.nodeModulesDir, `${AGENT_ROOT}/node_modules`], plan.agent.nodeModulesDir);
  add(AGENT_NODE, ['--ro-bind', plan.agent.nodeBinary, AGENT_NODE], plan.agent.nodeBinary);
  if (plan.image.hostLoader) add(AGENT_LIB, ['--ro-bind', plan.image.hostLoader.dir, AGENT_LIB], plan.image.hostLoader.dir);

  add(SANDBOX_CODE_DIR, ['--ro-bind', plan.codeDir, SANDBOX_CODE_DIR], plan.codeDir);
  for (const volume of plan.volumes) add(volume.mountPath, [volume.readOnly ? '--ro-bind' : '--bind', volume.hostPath, volume.mountPath], volume.hostPath);
  return mounts;
}

/**
 * The mounts whose mount point is in the sandbox's root itself, not in another of its mounts
 * (a volume inside /workspace has its mount point in the sandbox's folder; /dev/shm in /dev).
 */
export function rootMountPoints(plan: LaunchPlan): SandboxMount[] {
  const mounts = sandboxMounts(plan).filter((mount) => !mount.inPlace);
  return mounts.filter((mount, i) => !mounts.slice(0, i).some((below) => mount.dest.startsWith(`${below.dest}/`)));
}

/**
 * setpriv drops to the sandbox user and every capability, then runs the agent. On a built-in
 * image both come from the image's own /usr; on a pulled image, whose libc may not be the host's,
 * both are the host's programs started through the host's loader with the host's libraries
 * (host-loader.ts), which no variable passes on to the user's processes.
 */
function agentCommand(plan: LaunchPlan): string[] {
  const hostLoader = plan.image.hostLoader;
  const loader = hostLoader ? [`${AGENT_LIB}/${hostLoader.loader}`, '--library-path', AGENT_LIB] : [];
  const setpriv = hostLoader ? [...loader, `${AGENT_LIB}/setpriv`] : ['/usr/bin/setpriv'];
  const node = hostLoader ? [...loader, '--argv0', AGENT_NODE, AGENT_NODE] : [AGENT_NODE];
  return [
    ...setpriv,
    '--reuid',
    String(plan.uid),
    '--regid',
    String(plan.gid),
    '--clear-groups',
    '--bounding-set',
    '-all',
    '--inh-caps',
    '-all',
    '--',
    ...node,
    ...plan.agent.nodeFlags,
    AGENT_ENTRY,
  ];
}

/** A volume's mount path: absolute, normalized, and clear of the reserved paths. */
export function volumeMountError(mountPath: string): string | undefined {
  if (typeof mountPath !== 'string' || !mountPath.startsWith('/')) return `mountPath must be an absolute path, got '${mountPath}'`;
  if (mountPath.split('/').some((part) => part === '..' || part === '.')) return `mountPath must not contain '.' or '..': '${mountPath}'`;
  if (path.posix.normalize(mountPath) !== mountPath || mountPath.endsWith('/')) return `mountPath must be normalized, got '${mountPath}'`;
  if (/[\0:]/.test(mountPath)) return `mountPath contains a forbidden character: '${mountPath}'`;
  const reserved = RESERVED_PATHS.find((r) => mountPath === r || mountPath.startsWith(`${r}/`) || r.startsWith(`${mountPath}/`));
  if (reserved) return `mountPath '${mountPath}' overlaps the reserved path ${reserved}`;
  return undefined;
}
