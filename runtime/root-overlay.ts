import fs from 'node:fs';
import path from 'node:path';
import type { SandboxMount } from './bwrap-args';
import type { SandboxLayout } from './layout';

/**
 * The root of a sandbox on a stored image (base-image, a pulled image, a workspace's build): an
 * overlay whose read-only lower layer is the image's unpacked rootfs, shared by every sandbox on
 * it, and whose upper layer is the sandbox's own (`fs/upper`, beside its folders), so a sandbox
 * writes wherever the image's owners and modes let its user (an image's `USER 1000` and the
 * folders that user owns) and the image's files never change. Debian 12's bubblewrap (0.8) has
 * no overlay options, so the launcher mounts the overlay itself, in a mount namespace of its own
 * that lives as long as the sandbox (the host never sees the mount), and bubblewrap binds it as
 * the sandbox's `/`. The options name the layers relative to the data folder (the mount is made
 * from there), so the sandbox's /proc/self/mountinfo names no host folder. The features that
 * would tie an upper layer to the one lower tree it was made over (index, metacopy, redirects,
 * xino) are off: an upper layer copied to a fork, a snapshot or a restore mounts over the same
 * image again as it was, and one over a re-pulled tag sees the new image under its own changes.
 */
const MOUNT_OPTIONS = ['nosuid', 'nodev', 'index=off', 'metacopy=off', 'redirect_dir=off', 'xino=off'];

/** The launcher's exit code when the overlay could not be mounted (its error is in the agent log). */
export const OVERLAY_MOUNT_FAILED = 96;

/**
 * Mounts the overlay from the data folder (the options are relative to it; only the mount's own
 * process changes folder, so bubblewrap starts where the launcher did), then runs the rest.
 */
const MOUNT_SCRIPT = `(cd "$1" && exec mount -t overlay overlay -o "$2" "$3") || exit ${OVERLAY_MOUNT_FAILED}; shift 3; exec "$@"`;

/**
 * The launcher's command before bubblewrap: a private mount namespace (`unshare --mount`), the
 * overlay mounted in it at the layout's mount point, then bubblewrap by exec (same process: the
 * runtime's recorded pid stays bubblewrap's).
 */
export function rootOverlayCommand(unsharePath: string, dataDir: string, layout: SandboxLayout, lowerDir: string): string[] {
  const relative = (dir: string) => {
    const rel = path.relative(path.resolve(dataDir), path.resolve(dir));
    // The options are a comma-separated list and lowerdir a colon-separated one: no path may hold either.
    if (rel.startsWith('..') || path.isAbsolute(rel) || /[,:\\]/.test(rel)) throw new Error(`the overlay layer ${dir} is not a plain folder of the data folder ${dataDir}`);
    return rel;
  };
  const options = [`lowerdir=${relative(lowerDir)}`, `upperdir=${relative(layout.upperDir)}`, `workdir=${relative(layout.overlayWorkDir)}`, ...MOUNT_OPTIONS].join(',');
  return [unsharePath, '--mount', '--propagation', 'private', '--', '/bin/sh', '-c', MOUNT_SCRIPT, 'hangar-overlay', path.resolve(dataDir), options, path.resolve(layout.overlayMountPoint)];
}

const lstat = (file: string) => fs.lstatSync(file, { throwIfNoEntry: false });

/**
 * Makes the upper layer ready for a start: the layer and work folders, and every mount point of
 * the sandbox's tree (`mountPoints`: its /proc, /etc, own folders, sockets, agent files, volumes)
 * as a real folder (or file) inside the upper layer itself, before bubblewrap runs. Bubblewrap
 * would otherwise make missing ones through the merged tree, following whatever a user left on
 * the way: a symbolic link in the upper layer (`/opt/app/data -> /oldroot/...`), resolved in
 * bubblewrap's own root where the host's is at /oldroot, would have it make folders on the host.
 * So each step of the way is looked at without following links, and what is not a folder (a
 * link, a file, a whiteout of a deleted folder) is removed first. A folder made where the image
 * has one takes the image's owner and mode, as the overlay's copy-up would. Nothing of the
 * sandbox runs meanwhile (it starts after), so nothing can change the layer between the check and
 * the mount. Synchronous: a hundred or so system calls on local folders, which cost less than as
 * many round trips through libuv's thread pool (a start waits for them).
 */
export function prepareUpperLayer(layout: SandboxLayout, lowerDir: string, mountPoints: SandboxMount[]): void {
  fs.mkdirSync(layout.fsRoot, { recursive: true, mode: 0o755 });
  if (!lstat(layout.upperDir)?.isDirectory()) {
    fs.rmSync(layout.upperDir, { recursive: true, force: true });
    makeLike(layout.upperDir, lstat(lowerDir), false);
  }
  fs.mkdirSync(layout.overlayWorkDir, { recursive: true, mode: 0o700 });
  fs.mkdirSync(layout.overlayMountPoint, { recursive: true, mode: 0o700 });
  // Steps shared by mount points (/run, /opt/hangar) are settled once.
  const settled = new Set<string>();
  for (const mount of mountPoints) {
    const isFile = mount.source !== undefined && fs.statSync(mount.source, { throwIfNoEntry: false })?.isFile() === true;
    makeMountPoint(layout.upperDir, lowerDir, mount.dest, isFile, settled);
  }
}

function makeMountPoint(upperDir: string, lowerDir: string, inside: string, isFile: boolean, settled: Set<string>): void {
  const parts = inside.split('/').filter(Boolean);
  let upper = upperDir;
  // The image's folder at this step; undefined once the image has none (or a link, never followed).
  let lower: string | undefined = lowerDir;
  for (const [i, name] of parts.entries()) {
    const file = isFile && i === parts.length - 1;
    upper = path.join(upper, name);
    const image: fs.Stats | undefined = lower === undefined ? undefined : lstat(path.join(lower, name));
    lower = image?.isDirectory() ? path.join(lower!, name) : undefined;
    if (!file && settled.has(upper)) continue;
    const found = lstat(upper);
    if (!(found && (file ? found.isFile() : found.isDirectory()))) {
      if (found) fs.rmSync(upper, { recursive: true, force: true });
      makeLike(upper, image, file);
    }
    if (!file) settled.add(upper);
  }
}

/** A folder (or empty file) with the image's owner and mode when the image has a folder there; root's, 0755, otherwise. */
function makeLike(target: string, image: fs.Stats | undefined, file: boolean): void {
  if (file) {
    fs.writeFileSync(target, '', { mode: 0o644, flag: 'wx' });
    return;
  }
  fs.mkdirSync(target);
  const like = image?.isDirectory() ? image : undefined;
  fs.chmodSync(target, like ? like.mode & 0o7777 : 0o755);
  if (like) fs.chownSync(target, like.uid, like.gid);
}
