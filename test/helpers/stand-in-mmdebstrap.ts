import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** A program that takes mmdebstrap's place for tests of how builds are coordinated. */
export interface StandInMmdebstrap {
  /** The program, for BwrapRuntime's `images.mmdebstrapPath` or DebianBaseImage's `mmdebstrapPath`. */
  path: string;
  /** How long each run takes from now on, before it writes its tar. */
  setDelay(ms: number): void;
  /** The runs so far: started, and finished (its tar written). */
  runs(): { started: number; finished: number };
}

/**
 * A stand-in for mmdebstrap that writes, after a delay the test sets, the tar of a tiny tree
 * (Debian's static busybox as /bin/sh and its applets, `/etc/debian_version` saying `stand-in`)
 * where mmdebstrap would write its Debian tree, and logs each run. The real build takes a minute
 * or more: tests of many generated interleavings of creates, builds and restarts use this one,
 * the test of the image's contents (base-image.test.ts) the real one.
 */
export function standInMmdebstrap(dir: string): StandInMmdebstrap {
  const rootfs = path.join(dir, 'rootfs');
  const bin = path.join(rootfs, 'usr', 'bin');
  fs.mkdirSync(bin, { recursive: true });
  fs.copyFileSync('/bin/busybox', path.join(bin, 'busybox'));
  fs.chmodSync(path.join(bin, 'busybox'), 0o755);
  for (const applet of execFileSync('/bin/busybox', ['--list'], { encoding: 'utf8' }).split('\n').filter(Boolean)) {
    if (applet !== 'busybox') fs.symlinkSync('busybox', path.join(bin, applet));
  }
  fs.symlinkSync('usr/bin', path.join(rootfs, 'bin'));
  for (const folder of ['etc', 'tmp', 'home', 'var/tmp']) fs.mkdirSync(path.join(rootfs, folder), { recursive: true });
  fs.writeFileSync(path.join(rootfs, 'etc', 'debian_version'), 'stand-in\n');
  const log = path.join(dir, 'runs.log');
  const delay = path.join(dir, 'delay');
  fs.writeFileSync(delay, '0');
  const program = path.join(dir, 'mmdebstrap');
  // Its last argument is the tar to write (no mirror is given); the others are mmdebstrap's options.
  fs.writeFileSync(
    program,
    `#!/bin/bash
set -e
out="\${@: -1}"
echo "started $$" >> ${JSON.stringify(log)}
sleep "$(cat ${JSON.stringify(delay)})"
tar -C ${JSON.stringify(rootfs)} -cf "$out" .
echo "finished $$" >> ${JSON.stringify(log)}
`,
    { mode: 0o755 },
  );
  const lines = () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n') : []);
  return {
    path: program,
    setDelay: (ms) => fs.writeFileSync(delay, (ms / 1000).toFixed(3)),
    runs: () => ({ started: lines().filter((l) => l.startsWith('started')).length, finished: lines().filter((l) => l.startsWith('finished')).length }),
  };
}
