import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { rootfsMounts, sandboxOwnedPaths } from '../../../runtime/image-tree';

let rootfs: string;

beforeAll(() => {
  rootfs = fs.mkdtempSync(path.join(os.tmpdir(), 'rootfs-'));
  for (const dir of ['usr/bin', 'etc', 'home/someone', 'var/cache', 'var/tmp', 'opt/tool', 'opt/hangar', 'proc', 'srv']) fs.mkdirSync(path.join(rootfs, dir), { recursive: true });
  fs.symlinkSync('usr/bin', path.join(rootfs, 'bin'));
  fs.symlinkSync('/host/secret', path.join(rootfs, 'workspace'));
  fs.symlinkSync('../run', path.join(rootfs, 'var/run'));
  fs.writeFileSync(path.join(rootfs, 'marker.txt'), 'x');
  fs.writeFileSync(path.join(rootfs, 'tmp'), 'a file where the sandbox has a folder');
  execFileSync('mkfifo', [path.join(rootfs, 'fifo')]);
});

afterAll(() => fs.rmSync(rootfs, { recursive: true, force: true }));

test("every entry of the image in its place, except the sandbox's own paths; folders holding one are entered, not bound", () => {
  const owned = sandboxOwnedPaths(
    [
      { hostPath: '/d/home', sandboxPath: '/home/user', shared: false },
      { hostPath: '/d/ws', sandboxPath: '/workspace', shared: false },
      { hostPath: '/d/tmp', sandboxPath: '/tmp', shared: true },
      { hostPath: '/d/vt', sandboxPath: '/var/tmp', shared: true },
    ],
    [{ hostPath: '/vols/1', mountPath: '/srv/data', readOnly: false }],
  );
  const mounts = rootfsMounts(rootfs, owned);
  const bind = (inside: string) => ({ kind: 'ro-bind', path: inside, source: path.join(rootfs, inside) });
  expect(mounts).toEqual([
    { kind: 'symlink', path: '/bin', target: 'usr/bin' },
    bind('/home/someone'),
    bind('/marker.txt'),
    bind('/opt/tool'),
    bind('/usr'),
    bind('/var/cache'),
    { kind: 'symlink', path: '/var/run', target: '../run' },
  ]);
  // Never an image entry at the sandbox's own paths (/etc, /proc, /tmp, /workspace, /opt/hangar,
  // the volume), and no fifo: the link the image put at /workspace gives way to the sandbox's folder.
  for (const mount of mounts) expect(owned.some((p) => mount.path === p || mount.path.startsWith(`${p}/`))).toBe(false);
});
