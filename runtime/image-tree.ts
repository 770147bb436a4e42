import fs from 'node:fs';
import path from 'node:path';
import { AGENT_ROOT } from './bwrap-args';
import type { SystemMount } from './image';
import { SANDBOX_CODE_DIR, type WritableFolder } from './layout';
import type { RuntimeVolumeMount } from './sandbox-runtime';

/**
 * The paths a sandbox provides itself, which its image's tree leaves free: its /etc, the kernel's
 * views, /run (the agent's sockets), /app, the agent's folder, its writable folders and volumes.
 */
export function sandboxOwnedPaths(writable: WritableFolder[], volumes: RuntimeVolumeMount[]): string[] {
  return ['/etc', '/proc', '/dev', '/sys', '/run', SANDBOX_CODE_DIR, AGENT_ROOT, ...writable.map((f) => f.sandboxPath), ...volumes.map((v) => v.mountPath)];
}

/**
 * The read-only tree of a sandbox on an unpacked image: every entry of the image's rootfs bound
 * (or, for a symbolic link, recreated) at its own place, except the paths the sandbox provides
 * itself (`owned`: /etc, /proc, /tmp, its writable folders, the agent, volumes...). A folder
 * with an owned path somewhere below it is not bound whole, since nothing could be mounted inside
 * a read-only bind, but entered, its other entries bound one by one. The sandbox's root stays
 * bubblewrap's own tmpfs, as with the built-in image, so mount points are made there and never
 * in the image, which is shared by every sandbox using it and never changes.
 *
 * Links are never followed on the host: an entry is read with lstat and a link is recreated
 * inside, where it resolves within the sandbox. Devices, pipes and sockets of an image are left
 * out (the binds would not let them be used anyway: they are nodev).
 */
export function rootfsMounts(rootfs: string, owned: string[]): SystemMount[] {
  const mounts: SystemMount[] = [];
  const walk = (dir: string) => {
    for (const name of fs.readdirSync(path.join(rootfs, dir)).sort()) {
      const inside = path.posix.join(dir, name);
      if (owned.includes(inside)) continue;
      const source = path.join(rootfs, inside);
      const stat = fs.lstatSync(source);
      if (owned.some((p) => p.startsWith(`${inside}/`))) {
        // A link or file where the sandbox puts a folder of its own gives way to that folder.
        if (stat.isDirectory()) walk(inside);
      } else if (stat.isSymbolicLink()) {
        mounts.push({ kind: 'symlink', path: inside, target: fs.readlinkSync(source) });
      } else if (stat.isDirectory() || stat.isFile()) {
        mounts.push({ kind: 'ro-bind', path: inside, source });
      }
    }
  };
  walk('/');
  return mounts;
}
