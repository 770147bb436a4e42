import { execFile } from 'node:child_process';
import fsp from 'node:fs/promises';
import path from 'node:path';

/** OCI's whiteouts: `.wh.<name>` hides `<name>` of the layers below; `.wh..wh..opq` hides every entry of its folder below. */
const WHITEOUT = '.wh.';
const OPAQUE = '.wh..wh..opq';

/**
 * Makes `rootfs` (which must not exist) from layers extracted each into a folder of its own
 * (layer-extract.ts), in the manifest's order, by moving their entries: the first layer's folder
 * becomes the rootfs, and each later one is merged in, its whiteouts first removing what the
 * layers below had, then its entries replacing those below (folders present on both sides are
 * merged, and take the upper layer's owner, mode and times). Whiteout files never reach the
 * result. Everything is moved by rename, on one file system: no byte is copied.
 *
 * Links are never followed: entries are compared by lstat, a folder below is entered only when
 * it is a real folder on both sides, and removal does not follow links.
 */
export async function applyLayers(layerDirs: string[], rootfs: string): Promise<void> {
  const [first, ...rest] = layerDirs;
  if (first === undefined) {
    await fsp.mkdir(rootfs, { mode: 0o755 });
    return;
  }
  await fsp.rename(first, rootfs);
  for (const layer of rest) await mergeFolder(layer, rootfs);
  // Whiteouts of the first layer, and those inside folders moved whole, hide nothing: drop them.
  await removeWhiteoutFiles(rootfs);
}

async function mergeFolder(from: string, to: string): Promise<void> {
  const entries = await fsp.readdir(from, { withFileTypes: true });
  if (entries.some((entry) => entry.name === OPAQUE)) {
    for (const below of await fsp.readdir(to)) await fsp.rm(path.join(to, below), { recursive: true, force: true });
  }
  for (const entry of entries) {
    if (entry.name === OPAQUE || !entry.name.startsWith(WHITEOUT)) continue;
    const hidden = entry.name.slice(WHITEOUT.length);
    if (hidden !== '' && hidden !== '.' && hidden !== '..') await fsp.rm(path.join(to, hidden), { recursive: true, force: true });
  }
  for (const entry of entries) {
    if (entry.name.startsWith(WHITEOUT)) continue;
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    const below = await fsp.lstat(target).catch(() => undefined);
    if (entry.isDirectory() && below?.isDirectory()) {
      await mergeFolder(source, target);
      await takeFolderAttributes(source, target);
      continue;
    }
    if (below) await fsp.rm(target, { recursive: true, force: true });
    await fsp.rename(source, target);
  }
}

/** A folder both layers have is the upper layer's: its owner, mode (setgid and sticky bits too) and times. */
async function takeFolderAttributes(source: string, target: string): Promise<void> {
  const stat = await fsp.lstat(source);
  await fsp.lchown(target, stat.uid, stat.gid);
  await fsp.chmod(target, stat.mode & 0o7777);
  await fsp.utimes(target, stat.atime, stat.mtime);
}

/** Removes every whiteout file under `rootfs` (find -P: links are not followed). */
function removeWhiteoutFiles(rootfs: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('find', ['-P', rootfs, '-name', `${WHITEOUT}*`, '-prune', '-exec', 'rm', '-rf', '--', '{}', '+'], { env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' } }, (err, _stdout, stderr) =>
      err ? reject(new Error(`could not remove the image's whiteout files: ${String(stderr).trim() || err.message}`)) : resolve(),
    );
  });
}
