import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseLddOutput } from '../domain/images/ldd';

/**
 * The host's own dynamic loader and the shared libraries the agent's programs need (the node
 * binary, and setpriv, which drops to the sandbox user), gathered in one host folder that a
 * sandbox on an image sees read-only at /opt/hangar/lib. The agent then runs on the host's libc
 * whatever libc the image has (musl, an older glibc, none at all): the loader is started by its
 * path with `--library-path`, so nothing of the image's /lib is loaded into the agent, and no
 * variable (LD_LIBRARY_PATH) reaches the user's processes, which use the image's libraries.
 */
export interface HostLoader {
  /** Host folder: the loader, the libraries and the programs included, each under its file name. */
  dir: string;
  /** File name of the loader in it (`ld-linux-x86-64.so.2`). */
  loader: string;
}

/**
 * Builds (once per content: a folder named by the hash of the files' paths, sizes and times,
 * never changed once made, since sandboxes have it mounted) the loader folder with what the
 * `programs` need, and the files of `include` (name in the folder -> host path) themselves. The
 * files are hard links to the host's where the data folder shares its file system, copies
 * otherwise. Throws when a program is not dynamically linked or needs a library the host lacks.
 */
export function prepareHostLoader(parentDir: string, programs: string[], include: Record<string, string>): HostLoader {
  const files = new Map<string, string>(Object.entries(include));
  let loader: string | undefined;
  for (const program of [...programs, ...Object.values(include)]) {
    const needs = parseLddOutput(execFileSync('ldd', [program], { encoding: 'utf8' }));
    if (!needs.interpreter) throw new Error(`${program} is not dynamically linked: it cannot be started through the host's loader`);
    if (needs.missing.length > 0) throw new Error(`${program} needs libraries the host lacks: ${needs.missing.join(', ')}`);
    if (loader !== undefined && loader !== path.basename(needs.interpreter)) throw new Error(`${program} uses another loader than the others (${needs.interpreter})`);
    loader = path.basename(needs.interpreter);
    files.set(loader, needs.interpreter);
    for (const library of needs.libraries) files.set(path.basename(library.path), library.path);
  }
  if (loader === undefined) throw new Error('no program to prepare the host loader for');

  const hash = createHash('sha256');
  for (const [name, file] of [...files].sort()) {
    const stat = fs.statSync(file);
    hash.update(`${name}\0${fs.realpathSync(file)}\0${stat.size}\0${stat.mtimeMs}\0`);
  }
  const dir = path.join(parentDir, `host-lib-${hash.digest('hex').slice(0, 16)}`);
  if (!fs.existsSync(dir)) build(dir, files);
  return { dir, loader };
}

function build(dir: string, files: Map<string, string>): void {
  const staging = `${dir}.${process.pid}.${randomBytes(4).toString('hex')}`;
  fs.mkdirSync(staging, { recursive: true, mode: 0o755 });
  for (const [name, file] of files) {
    const real = fs.realpathSync(file);
    const target = path.join(staging, name);
    try {
      fs.linkSync(real, target);
    } catch {
      fs.copyFileSync(real, target);
      fs.chmodSync(target, 0o755);
    }
  }
  try {
    fs.renameSync(staging, dir);
  } catch {
    // Another process built the same content first.
    fs.rmSync(staging, { recursive: true, force: true });
  }
}
