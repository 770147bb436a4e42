import { execFile } from 'node:child_process';
import { findOnPath } from './find-on-path';
import { hostSystemMounts } from './image';

/** Where the copy's own file system shows the source (read-only) and the folder copied into. */
const FROM = '/from';
const INTO = '/into';

/**
 * What root's cp needs to copy a sandbox's files as they are: read any of them (modes 000
 * included), give the copies their owners, modes and times, and keep the `trusted.*` xattrs of a
 * root overlay's upper layer (`trusted.overlay.opaque` marks a folder made again over the
 * image's: without CAP_SYS_ADMIN cp drops it silently and the image's files show through in the
 * copy). Nothing else; cp is the only program run, in a file system of nothing else.
 */
const COPY_CAPABILITIES = ['CAP_CHOWN', 'CAP_DAC_OVERRIDE', 'CAP_DAC_READ_SEARCH', 'CAP_FOWNER', 'CAP_FSETID', 'CAP_SYS_ADMIN'];

let bwrapPath: string | undefined;

/**
 * The bubblewrap command line of one copy: a file system of nothing but the host's system
 * folders (read-only: cp and its libraries, which every sandbox on `base` sees anyway), the
 * source at /from (read-only) and the copy's folder at /into; no network, its own pids, dying
 * with the worker. Root keeps only COPY_CAPABILITIES.
 */
function confinedCopyArguments(from: string, into: string): string[] {
  const args = ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net', '--die-with-parent', '--new-session', '--clearenv'];
  // English complaints: which of them a live copy tolerates is read from their text.
  args.push('--setenv', 'LC_ALL', 'C', '--setenv', 'PATH', '/usr/bin:/bin');
  if (process.getuid?.() === 0) args.push('--cap-drop', 'ALL', ...COPY_CAPABILITIES.flatMap((cap) => ['--cap-add', cap]));
  for (const mount of hostSystemMounts()) {
    if (mount.kind === 'ro-bind') args.push('--ro-bind', mount.source ?? mount.path, mount.path);
    else args.push('--symlink', mount.target, mount.path);
  }
  args.push('--ro-bind', from, FROM, '--bind', into, INTO);
  // -T: /into is the copy itself (it gets the source's mode, owner and times), not its parent.
  args.push('--', 'cp', '-a', '--reflink=auto', '-T', FROM, INTO);
  return args;
}

/**
 * Copies the tree `from` into the existing empty folder `into` with `cp -a --reflink=auto`,
 * confined by bubblewrap. Why: cp walks the source by path names, so a sandbox that swaps one of
 * its folders for a symlink while cp is inside it would send root's cp through the link, and the
 * host's files (other sandboxes' layers, /etc) would land in a copy the sandbox then reads.
 * Confined, a link leads nowhere but the system folders the sandbox sees anyway.
 * Answers cp's complaints (one a line) when it failed, nothing when it did not.
 */
export function copyConfined(from: string, into: string): Promise<{ failed: Error | null; stderr: string }> {
  bwrapPath ??= findOnPath('bwrap');
  const args = confinedCopyArguments(from, into);
  return new Promise((resolve) => execFile(bwrapPath!, args, { maxBuffer: 16 * 1024 * 1024 }, (err, _stdout, stderr) => resolve({ failed: err, stderr })));
}
