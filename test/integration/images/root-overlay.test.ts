import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import type { StoredImage } from '../../../runtime/image-store';
import type { RuntimeSandboxSpec } from '../../../runtime/sandbox-runtime';
import { buildOnRuntime, userAppDockerfile } from '../../helpers/build-context';
import { buildTestImage, pushTestImage, startRegistry, type TestRegistry } from '../../helpers/oci-registry';
import { callSandbox, exec, runtimeDataDir, sandboxSpec, testRuntime } from '../../helpers/sandbox-runtime';

// A sandbox on a stored image runs on an overlay of it: the image's rootfs the read-only lower
// layer, the sandbox's own upper layer in `fs/upper`. The image is built here from a Dockerfile
// (`USER 1000`, an /opt/app owned by that user) on a busybox base from a registry of the test's
// own on loopback, through the runtime as a node builds it. Real sandboxes on a busy 2-core
// machine: generous limits, no test asserts on time.
jest.setTimeout(180_000);

const MiB = 1024 * 1024;
const dataDir = runtimeDataDir('root-overlay');
const work = path.join(dataDir, 'work');
const workspaceId = 'ws-overlay';
const reference = 'app:1';
let registry: TestRegistry;
let runtime: BwrapRuntime;
let image: StoredImage;
let imageDigest: string;

/** Every entry of a tree by path: type, mode, owner, size and content (or link target). */
function treeDigest(root: string): string {
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    for (const name of fs.readdirSync(path.join(root, dir)).sort()) {
      const inside = path.join(dir, name);
      const stat = fs.lstatSync(path.join(root, inside));
      hash.update(`${inside}\0${stat.mode}\0${stat.uid}\0${stat.gid}\0${stat.size}\0${stat.mtimeMs}\0`);
      if (stat.isSymbolicLink()) hash.update(fs.readlinkSync(path.join(root, inside)));
      else if (stat.isFile()) hash.update(fs.readFileSync(path.join(root, inside)));
      else if (stat.isDirectory()) walk(inside);
    }
  };
  walk('/');
  return hash.digest('hex');
}

beforeAll(async () => {
  fs.mkdirSync(work, { recursive: true });
  registry = await startRegistry(path.join(work, 'registry'));
  // With a device node anyone may open (the kernel's null device), which only a mount without nodev would let be used.
  buildTestImage(path.join(work, 'layout'), 'box', { files: { '/marker.txt': 'from the base\n', '/opt/.keep': '' }, devices: { '/opt/null': [1, 3] }, env: ['PATH=/bin'] });
  const base = `${registry.address}/test/box:1`;
  pushTestImage(path.join(work, 'layout'), 'box', base);
  runtime = testRuntime(dataDir);
  image = await buildOnRuntime(runtime, path.join(work, 'context.tar.gz'), { workspaceId, name: 'app', tag: '1', context: { Dockerfile: userAppDockerfile(base) } });
  // What the build made: the user's folder and the root-owned file beside it.
  expect(fs.statSync(path.join(image.rootfs, 'opt/app'))).toMatchObject({ uid: 1000, gid: 1000 });
  expect(fs.statSync(path.join(image.rootfs, 'opt/root.txt')).uid).toBe(0);
  imageDigest = treeDigest(image.rootfs);
});

afterAll(async () => {
  if (runtime) for (const sandbox of await runtime.list()) await runtime.remove(sandbox.id);
  await registry?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const onImage = (overrides: Partial<RuntimeSandboxSpec> = {}) => sandboxSpec({ workspaceId, image: reference, ...overrides });
const run = async (id: string, command: string) => {
  const result = await exec(runtime.socketPath(id), command);
  return { code: result.exitCode, out: result.stdout, err: result.stderr };
};
const upper = (id: string, inside: string) => path.join(runtime.layout(id).upperDir, inside);

describe('a sandbox on an image built with USER 1000 and its own /opt/app', () => {
  let spec: RuntimeSandboxSpec;

  beforeAll(async () => {
    spec = onImage();
    await runtime.start(spec);
  });

  test("the sandbox user writes /opt/app (processes and the file API), into the sandbox's upper layer; a deletion is a whiteout there", async () => {
    const written = await run(spec.id, 'pwd; echo v2 > config.txt && mkdir new && echo n > new/f && rm remove-me.txt && cat config.txt && ls');
    expect(written).toMatchObject({ code: 0, out: '/opt/app\nv2\nconfig.txt\ndata\nnew\n' });
    expect((await callSandbox(runtime.socketPath(spec.id), 'PUT', '/filesystem/opt/app/from-api.txt', { content: 'by the API\n' })).status).toBe(200);
    expect((await run(spec.id, 'cat /opt/app/from-api.txt; stat -c %U /opt/app/from-api.txt')).out).toBe('by the API\nuser\n');

    expect(fs.readFileSync(upper(spec.id, 'opt/app/config.txt'), 'utf8')).toBe('v2\n');
    const whiteout = fs.lstatSync(upper(spec.id, 'opt/app/remove-me.txt'));
    expect(whiteout.isCharacterDevice() && whiteout.rdev === 0).toBe(true);
    // The image itself has not changed.
    expect(fs.readFileSync(path.join(image.rootfs, 'opt/app/config.txt'), 'utf8')).toBe('v1\n');
    expect(fs.existsSync(path.join(image.rootfs, 'opt/app/remove-me.txt'))).toBe(true);
  });

  test("root-owned files and folders of the image are Permission denied to the user, through processes and the file API", async () => {
    const denied = await run(spec.id, 'echo x > /opt/root.txt; touch /bin/evil; rm -f /bin/sh; mkdir /opt/other; cat /opt/root.txt');
    expect(denied.err).toBe(
      [
        '/bin/sh: can\'t create /opt/root.txt: Permission denied',
        "touch: /bin/evil: Permission denied",
        "rm: can't remove '/bin/sh': Permission denied",
        "mkdir: can't create directory '/opt/other': Permission denied",
        '',
      ].join('\n'),
    );
    expect(denied.out).toBe('root-only\n');
    expect((await callSandbox(runtime.socketPath(spec.id), 'PUT', '/filesystem/opt/root.txt', { content: 'x' })).status).toBe(403);
    expect(fs.existsSync(upper(spec.id, 'opt/root.txt'))).toBe(false);
  });

  test('the root is an overlay mounted nosuid and nodev whose options name its layers relative to the data folder, no host folder', async () => {
    const line = (await run(spec.id, "grep ' / / ' /proc/self/mountinfo")).out.trim();
    const fields = line.split(' ');
    expect(fields[5].split(',')).toEqual(expect.arrayContaining(['rw', 'nosuid', 'nodev']));
    const [fsType, source, superOptions] = fields.slice(fields.indexOf('-') + 1);
    expect([fsType, source]).toEqual(['overlay', 'overlay']);
    const options = superOptions.split(',');
    expect(options).toEqual(
      expect.arrayContaining([`lowerdir=images/oci/unpacked/${image.digest.slice('sha256:'.length)}/rootfs`, `upperdir=sandboxes/${spec.id}/fs/upper`, `workdir=sandboxes/${spec.id}/overlay-work`]),
    );
    // nodev at work: the image's device node, open to anyone by its mode, cannot be opened. (The
    // launcher mounts the overlay nosuid,nodev, and bubblewrap's bind of it as / is so again: the
    // flags seen here are that bind's, which is what the sandbox's processes go through.)
    expect(fs.lstatSync(path.join(image.rootfs, 'opt/null')).isCharacterDevice()).toBe(true);
    expect((await run(spec.id, 'cat /opt/null')).err).toBe("cat: can't open '/opt/null': Permission denied\n");
    expect(line).not.toContain(dataDir);
    expect(options.filter((option) => option.includes('=/'))).toEqual([]);
    // The host never sees the overlay: it is mounted in the sandbox's own mount namespace only.
    expect(fs.readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(`sandboxes/${spec.id}`);
    expect(fs.readdirSync(runtime.layout(spec.id).overlayMountPoint)).toEqual([]);
  });

  test("what it wrote is kept across standby and a restart; another sandbox on the image sees the image as built", async () => {
    await runtime.freeze(spec.id);
    await runtime.thaw(spec.id);
    expect((await run(spec.id, 'cat /opt/app/config.txt /opt/app/new/f; ls /opt/app')).out).toBe('v2\nn\nconfig.txt\ndata\nfrom-api.txt\nnew\n');
    await runtime.stop(spec.id);
    await runtime.start(spec);
    expect((await run(spec.id, 'cat /opt/app/config.txt /opt/app/new/f; ls /opt/app')).out).toBe('v2\nn\nconfig.txt\ndata\nfrom-api.txt\nnew\n');

    const other = onImage();
    await runtime.start(other);
    expect((await run(other.id, 'cat /opt/app/config.txt; ls /opt/app')).out).toBe('v1\nconfig.txt\ndata\nremove-me.txt\n');
    expect((await run(other.id, 'echo theirs > /opt/app/config.txt; cat /opt/app/config.txt')).out).toBe('theirs\n');
    expect((await run(spec.id, 'cat /opt/app/config.txt')).out).toBe('v2\n');
    await runtime.remove(other.id);
  });

  test("a fork has the source's upper layer as of the fork (its deletion a whiteout there, a folder made again opaque) and diverges after it", async () => {
    // A folder of the image deleted and made again: an opaque folder of the upper layer (an xattr), which hides the image's entries.
    expect((await run(spec.id, 'rm -r /opt/app/data && mkdir /opt/app/data && echo own > /opt/app/data/own.txt && ls /opt/app/data')).out).toBe('own.txt\n');
    const snapshotId = randomUUID();
    await runtime.captureFiles(spec.id, snapshotId);
    const fork = onImage({ seedSnapshotId: snapshotId });
    await runtime.start(fork);
    expect((await run(fork.id, 'cat /opt/app/config.txt; ls /opt/app')).out).toBe('v2\nconfig.txt\ndata\nfrom-api.txt\nnew\n');
    const whiteout = fs.lstatSync(upper(fork.id, 'opt/app/remove-me.txt'));
    expect(whiteout.isCharacterDevice() && whiteout.rdev === 0).toBe(true);
    expect((await run(fork.id, 'ls /opt/app/data')).out).toBe('own.txt\n');

    expect((await run(fork.id, 'echo v3 > /opt/app/config.txt && rm -r /opt/app/new && cat /opt/app/config.txt')).out).toBe('v3\n');
    expect((await run(spec.id, 'cat /opt/app/config.txt /opt/app/new/f')).out).toBe('v2\nn\n');
    await runtime.remove(fork.id);
    await runtime.removeSnapshotFiles(snapshotId);
  });

  test('a restore puts the upper layer back as of the snapshot, the sandbox running on it again', async () => {
    const snapshotId = randomUUID();
    await runtime.captureFiles(spec.id, snapshotId);
    expect((await run(spec.id, 'echo later > /opt/app/config.txt && rm /opt/app/from-api.txt && cat /opt/app/config.txt')).out).toBe('later\n');
    await runtime.restoreFiles(spec.id, snapshotId, `restore-${snapshotId}`);
    expect((await run(spec.id, 'cat /opt/app/config.txt /opt/app/from-api.txt')).out).toBe('v2\nby the API\n');
    await runtime.removeSnapshotFiles(snapshotId);
  });

  test("the upper layer is metered as the sandbox's image storage", async () => {
    const before = await runtime.imageStorageBytes(spec.id, reference);
    expect(before).toBeGreaterThanOrEqual(image.storedBytes);
    expect((await run(spec.id, 'head -c 8388608 /dev/urandom > /opt/app/blob && sync')).code).toBe(0);
    const after = await runtime.imageStorageBytes(spec.id, reference);
    expect(Math.abs(after - before - 8 * MiB)).toBeLessThanOrEqual(0.02 * 8 * MiB);
    expect((await run(spec.id, 'rm /opt/app/blob && sync')).code).toBe(0);
    expect(await runtime.imageStorageBytes(spec.id, reference)).toBeLessThan(before + MiB);
  });
});

test("links a user left in the upper layer on the way to a mount point are removed before a start: bubblewrap makes no folder on the host through them", async () => {
  const spec = onImage();
  await runtime.start(spec);
  await runtime.stop(spec.id);
  // Between two starts, links where the sandbox's mount points go (/run/hangar..., /opt/hangar/...),
  // pointing at a host folder as bubblewrap sees the host while it builds the tree (/oldroot).
  const host = path.join(work, `host-${spec.id}`);
  fs.mkdirSync(host);
  for (const inside of ['run', 'opt/hangar']) {
    fs.rmSync(upper(spec.id, inside), { recursive: true, force: true });
    fs.symlinkSync(`/oldroot${host}`, upper(spec.id, inside));
  }
  // (Without the node's check, bubblewrap makes hangar, hangar-api... in the host folder, and the sandbox finds no agent.)
  const failure = await runtime.start(spec).then(() => undefined, (err: Error) => err.message);
  expect(fs.readdirSync(host)).toEqual([]);
  expect(failure).toBeUndefined();
  for (const inside of ['run', 'opt/hangar']) expect(fs.lstatSync(upper(spec.id, inside)).isDirectory()).toBe(true);
  expect((await run(spec.id, 'ls /run; ls /opt/hangar; cat /opt/app/config.txt')).out).toBe('hangar\nhangar-api\nhangar-platform\nagent\nbin\nlib\nnode_modules\nv1\n');
  await runtime.remove(spec.id);
});

test("a mount point the image has as a folder is made in the upper layer with the image's owner and mode; a volume inside /opt/app is mounted there", async () => {
  const volume = path.join(work, 'volume');
  fs.mkdirSync(volume, { recursive: true });
  fs.chmodSync(volume, 0o777);
  const spec = onImage({ volumes: [{ hostPath: volume, mountPath: '/opt/app/data/vol', readOnly: false }] });
  await runtime.start(spec);
  expect(fs.statSync(upper(spec.id, 'opt/app/data'))).toMatchObject({ uid: 1000, gid: 1000, mode: fs.statSync(path.join(image.rootfs, 'opt/app/data')).mode });
  expect((await run(spec.id, 'echo in-volume > /opt/app/data/vol/f; stat -c "%U %a" /opt/app /opt/app/data; ls -ld /opt | cut -c1-10')).out).toBe(
    `user ${(fs.statSync(path.join(image.rootfs, 'opt/app')).mode & 0o777).toString(8)}\nuser ${(fs.statSync(path.join(image.rootfs, 'opt/app/data')).mode & 0o777).toString(8)}\ndrwxr-xr-x\n`,
  );
  expect(fs.readFileSync(path.join(volume, 'f'), 'utf8')).toBe('in-volume\n');
  await runtime.remove(spec.id);
});

test('a sandbox made before the overlay (its image as read-only binds) keeps its files when it next starts on its overlay', async () => {
  // The node as it ran before, on the same data folder.
  const before = testRuntime(dataDir, { images: { rootOverlay: false } });
  const spec = onImage();
  await before.start(spec);
  const old = await exec(before.socketPath(spec.id), 'echo mine > /home/user/kept.txt && echo w > /workspace/w.txt && echo x > /tmp/t; touch /opt/app/new.txt');
  expect(old.stderr).toBe('touch: /opt/app/new.txt: Read-only file system\n');
  await before.stop(spec.id);
  await runtime.start(spec);
  expect((await run(spec.id, 'cat /home/user/kept.txt /workspace/w.txt /tmp/t && touch /opt/app/new.txt && ls /opt/app')).out).toBe('mine\nw\nx\nconfig.txt\ndata\nnew.txt\nremove-me.txt\n');
  await runtime.remove(spec.id);
});

test("the image's files are unchanged on disk after all the sandboxes' writes", () => {
  expect(treeDigest(image.rootfs)).toBe(imageDigest);
});
