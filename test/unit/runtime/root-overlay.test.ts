import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import type { SandboxMount } from '../../../runtime/bwrap-args';
import { sandboxLayout } from '../../../runtime/layout';
import { prepareUpperLayer, rootOverlayCommand } from '../../../runtime/root-overlay';

// The node's side of a sandbox's root overlay before bubblewrap runs, on a real file system (as
// root, as the node runs: owners, device nodes). Whatever a user left in the upper layer on the
// way to a mount point, every step becomes a real folder and nothing is made outside the layer.
let root: string;
let lower: string;
let outside: string;
let agentBinary: string;

beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-root-overlay-'));
  lower = path.join(root, 'images', 'oci', 'unpacked', 'ab', 'rootfs');
  for (const dir of ['etc', 'home', 'opt/app/data', 'var']) fs.mkdirSync(path.join(lower, dir), { recursive: true, mode: 0o755 });
  fs.chownSync(path.join(lower, 'opt/app'), 1000, 1000);
  fs.chmodSync(path.join(lower, 'opt/app'), 0o750);
  fs.chownSync(path.join(lower, 'opt/app/data'), 1000, 1000);
  // A link of the image where the sandbox puts a folder of its own: the folder is made, the link never followed.
  fs.symlinkSync(outsideDir(), path.join(lower, 'var/run'));
  outside = outsideDir();
  fs.mkdirSync(outside);
  agentBinary = path.join(root, 'node-binary');
  fs.writeFileSync(agentBinary, 'binary');
});

function outsideDir(): string {
  return path.join(root, 'host-folder');
}

afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const MOUNT_POINTS: SandboxMount[] = [
  { dest: '/proc', args: [] },
  { dest: '/etc', args: [] },
  { dest: '/home/user', args: [] },
  { dest: '/run/hangar', args: [] },
  { dest: '/run/hangar-api', args: [] },
  { dest: '/opt/hangar/agent', args: [] },
  { dest: '/opt/hangar/bin/node', args: [], source: '' },
  { dest: '/opt/app/data/vol', args: [] },
  { dest: '/var/run/x', args: [] },
];
const mountPoints = () => MOUNT_POINTS.map((m) => (m.source === undefined ? m : { ...m, source: agentBinary }));
/** Every step on the way to each mount point, as paths inside the tree. */
const STEPS = [...new Set(MOUNT_POINTS.flatMap((m) => m.dest.split('/').slice(1).map((_, i, parts) => parts.slice(0, i + 1).join('/'))))];

type Planted = 'nothing' | 'folder' | 'file' | 'link-out' | 'relative-link' | 'whiteout';
const PLANTED: Planted[] = ['nothing', 'folder', 'file', 'link-out', 'relative-link', 'whiteout'];

function plant(at: string, what: Planted): void {
  const stat = (file: string) => {
    try {
      return fs.lstatSync(file);
    } catch {
      return undefined;
    }
  };
  // Only inside a real folder the steps before left (not through a link, not in a file), once.
  if (what === 'nothing' || !stat(path.dirname(at))?.isDirectory() || stat(at)) return;
  if (what === 'folder') {
    fs.mkdirSync(at);
    fs.writeFileSync(path.join(at, 'keep.txt'), 'the user wrote this');
  } else if (what === 'file') fs.writeFileSync(at, 'a file in the way');
  else if (what === 'link-out') fs.symlinkSync(`/oldroot${outside}`, at);
  else if (what === 'relative-link') fs.symlinkSync('../../../../../../../../host-folder', at);
  else execFileSync('mknod', [at, 'c', '0', '0']);
}

let counter = 0;

test('whatever a user left on the way to the mount points, each step becomes a real folder (the agent binary a file), nothing is made outside, and folders in the way keep their files', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.constantFrom(...PLANTED), { minLength: STEPS.length, maxLength: STEPS.length }), async (planted) => {
      const layout = sandboxLayout(root, `sb-${++counter}`);
      fs.mkdirSync(layout.upperDir, { recursive: true });
      // Shallow steps first, so a deeper one is planted inside what its parent became.
      STEPS.forEach((step, i) => plant(path.join(layout.upperDir, step), planted[i]));
      const keptFolders = STEPS.filter((step) => fs.existsSync(path.join(layout.upperDir, step, 'keep.txt')) && fs.lstatSync(path.join(layout.upperDir, step)).isDirectory());

      prepareUpperLayer(layout, lower, mountPoints());

      for (const step of STEPS) {
        const stat = fs.lstatSync(path.join(layout.upperDir, step));
        if (step === 'opt/hangar/bin/node') expect(stat.isFile()).toBe(true);
        else expect(stat.isDirectory()).toBe(true);
      }
      expect(fs.readdirSync(outside)).toEqual([]);
      for (const step of keptFolders.filter((s) => s !== 'opt/hangar/bin/node')) expect(fs.readFileSync(path.join(layout.upperDir, step, 'keep.txt'), 'utf8')).toBe('the user wrote this');
      fs.rmSync(layout.root, { recursive: true, force: true });
    }),
    { numRuns: 60 },
  );
});

test("a folder made where the image has one takes its owner and mode; the layer's root takes the image root's; the work folder and mount point are made", async () => {
  const layout = sandboxLayout(root, 'sb-attrs');
  prepareUpperLayer(layout, lower, mountPoints());
  expect(fs.statSync(path.join(layout.upperDir, 'opt/app'))).toMatchObject({ uid: 1000, gid: 1000 });
  expect(fs.statSync(path.join(layout.upperDir, 'opt/app')).mode & 0o7777).toBe(0o750);
  expect(fs.statSync(path.join(layout.upperDir, 'opt/app/data')).uid).toBe(1000);
  // Not in the image: root's, traversable.
  expect(fs.statSync(path.join(layout.upperDir, 'opt/hangar'))).toMatchObject({ uid: 0, mode: fs.constants.S_IFDIR | 0o755 });
  expect(fs.statSync(layout.upperDir).mode & 0o7777).toBe(fs.statSync(lower).mode & 0o7777);
  expect(fs.statSync(layout.overlayWorkDir).isDirectory()).toBe(true);
  expect(fs.readdirSync(layout.overlayMountPoint)).toEqual([]);
  // A second start finds it all in place and changes nothing.
  fs.writeFileSync(path.join(layout.upperDir, 'opt/app/mine.txt'), 'mine');
  prepareUpperLayer(layout, lower, mountPoints());
  expect(fs.readFileSync(path.join(layout.upperDir, 'opt/app/mine.txt'), 'utf8')).toBe('mine');
});

test('the mount command names the layers relative to the data folder, nosuid and nodev, with the features that would tie an upper layer to one lower tree off', () => {
  const layout = sandboxLayout(root, 'sb-cmd');
  const command = rootOverlayCommand('/usr/bin/unshare', root, layout, lower);
  expect(command.slice(0, 5)).toEqual(['/usr/bin/unshare', '--mount', '--propagation', 'private', '--']);
  const [dataDir, options, mountPoint] = command.slice(-3);
  expect(dataDir).toBe(root);
  expect(mountPoint).toBe(layout.overlayMountPoint);
  expect(options.split(',')).toEqual(['lowerdir=images/oci/unpacked/ab/rootfs', 'upperdir=sandboxes/sb-cmd/fs/upper', 'workdir=sandboxes/sb-cmd/overlay-work', 'nosuid', 'nodev', 'index=off', 'metacopy=off', 'redirect_dir=off', 'xino=off']);
  // A layer outside the data folder, or with a separator of the options in its path, is refused.
  expect(() => rootOverlayCommand('/usr/bin/unshare', root, layout, '/elsewhere/rootfs')).toThrow(/not a plain folder of the data folder/);
  expect(() => rootOverlayCommand('/usr/bin/unshare', root, layout, path.join(root, 'images', 'a:b'))).toThrow(/not a plain folder/);
});
