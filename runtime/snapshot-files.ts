import { randomBytes } from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { copyConfined } from './confined-copy';
import { diskUsageBytes } from './disk-usage';
import { SandboxSpecError } from './sandbox-runtime';

const exists = (file: string) => fsp.stat(file).then(() => true, () => false);

/**
 * Copies a tree whole with its owners, modes, times and links (`cp -a`, confined: confined-copy.ts),
 * sharing the blocks instead where the file system can (`--reflink=auto`: btrfs, XFS), into a
 * folder beside `to` that is renamed into place: `to` holds all of the copy or does not exist, so
 * a copy cut short (a worker killed) is made again, never taken for done. `live`: the tree is a
 * running sandbox's, whose files may go while cp reads them (such a file is simply not in the
 * copy); a snapshot's files never change, so one vanishing means the snapshot is being deleted,
 * and the copy fails.
 */
async function copyTree(from: string, to: string, live = false): Promise<void> {
  const partial = `${to}.partial-${randomBytes(4).toString('hex')}`;
  await fsp.mkdir(path.dirname(to), { recursive: true, mode: 0o700 });
  // What an attempt cut short left (its worker died mid-copy) is of no use to this one.
  const stale = (await fsp.readdir(path.dirname(to))).filter((name) => name.startsWith(`${path.basename(to)}.partial-`));
  await Promise.all(stale.map((name) => fsp.rm(path.join(path.dirname(to), name), { recursive: true, force: true })));
  try {
    await fsp.mkdir(partial, { mode: 0o700 });
    const { failed, stderr } = await copyConfined(from, partial);
    // A running sandbox may delete a file between cp listing and copying it: it is simply
    // not in the copy, as it would not be a moment later. Any other complaint fails the copy.
    const complaints = stderr.split('\n').filter((line) => line.trim() && !(live && /No such file or directory$/.test(line)));
    if (failed && (complaints.length > 0 || !stderr.trim())) throw new Error(`copying files failed: ${complaints.join('; ') || failed.message}`);
    await fsp.rename(partial, to);
  } catch (err) {
    await fsp.rm(partial, { recursive: true, force: true });
    // Another attempt finished first: its copy is as good.
    if (await exists(to)) return;
    throw err;
  }
}

/**
 * A snapshot's files: the copy of a sandbox's writable layer taken once (a repeated capture
 * answers the first copy's size), and its size on disk.
 */
export async function captureTree(fsRoot: string, snapshotDir: string): Promise<number> {
  if (!(await exists(snapshotDir))) {
    if (!(await exists(fsRoot))) throw new Error('the sandbox has no files on this node');
    await copyTree(fsRoot, snapshotDir, true);
  }
  return diskUsageBytes([snapshotDir]);
}

/** A new sandbox's writable layer from a snapshot; one the sandbox already has (a restart) is kept. */
export async function seedTree(snapshotDir: string, fsRoot: string): Promise<void> {
  if (await exists(fsRoot)) return;
  // Deleted meanwhile (or on another node): retrying will not bring it back.
  if (!(await exists(snapshotDir))) throw new SandboxSpecError(`the snapshot's files are not on this node (${path.basename(path.dirname(snapshotDir))}): was it deleted?`);
  await copyFromSnapshot(snapshotDir, fsRoot);
}

/**
 * A copy of a snapshot's files. A deletion first moves the snapshot's folder away (removeTree), so
 * a copy it overtook either met a vanished file or finds the folder gone when done: either way the
 * copy may lack files and is refused as gone, never given to a sandbox in part.
 */
async function copyFromSnapshot(snapshotDir: string, to: string): Promise<void> {
  const gone = new SandboxSpecError(`the snapshot's files are not on this node (${path.basename(path.dirname(snapshotDir))}): it was deleted while they were copied`);
  try {
    await copyTree(snapshotDir, to);
  } catch (err) {
    if (/No such file or directory/.test((err as Error).message) || !(await exists(snapshotDir))) throw gone;
    throw err;
  }
  if (!(await exists(snapshotDir))) {
    await fsp.rm(to, { recursive: true, force: true });
    throw gone;
  }
}

/**
 * Replaces a sandbox's writable layer by a copy of a snapshot's (a restore): the copy is made
 * beside it first, then swapped in by renames, so a restore cut short leaves the old files or the
 * new ones whole, and a retry finishes it. The sandbox must not run meanwhile.
 */
export async function replaceTree(snapshotDir: string, fsRoot: string): Promise<void> {
  if (!(await exists(snapshotDir))) throw new SandboxSpecError(`the snapshot's files are not on this node (${path.basename(path.dirname(snapshotDir))}): was it deleted?`);
  const next = `${fsRoot}.restoring`;
  const previous = `${fsRoot}.replaced`;
  await Promise.all([next, previous].map((folder) => fsp.rm(folder, { recursive: true, force: true })));
  await copyFromSnapshot(snapshotDir, next);
  if (await exists(fsRoot)) await fsp.rename(fsRoot, previous);
  await fsp.rename(next, fsRoot);
  await fsp.rm(previous, { recursive: true, force: true });
}

/**
 * Deletes a snapshot's files (its folder); nothing to delete is fine. The folder is first renamed
 * away in one step, so a copy racing the deletion sees all of it or none (copyFromSnapshot), then
 * removed with what earlier deletions cut short left of it.
 */
export async function removeTree(snapshotDir: string): Promise<void> {
  const folder = path.dirname(snapshotDir);
  const going = `${folder}.removing-${randomBytes(4).toString('hex')}`;
  await fsp.rename(folder, going).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
  const parent = path.dirname(folder);
  const leftovers = (await fsp.readdir(parent).catch(() => [] as string[])).filter((name) => name.startsWith(`${path.basename(folder)}.removing-`));
  await Promise.all(leftovers.map((name) => fsp.rm(path.join(parent, name), { recursive: true, force: true })));
}
