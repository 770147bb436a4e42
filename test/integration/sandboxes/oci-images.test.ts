import fs from 'node:fs';
import path from 'node:path';
import { ImagePullError } from '../../../domain/images/pull-failure';
import type { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import { diskUsageBytes } from '../../../runtime/disk-usage';
import { SandboxSpecError, type SandboxHandle } from '../../../runtime/sandbox-runtime';
import { buildTestImage, pushTestImage, startRegistry, type TestRegistry } from '../../helpers/oci-registry';
import { callSandbox, exec, runtimeDataDir, sandboxSpec, testRuntime } from '../../helpers/sandbox-runtime';

// Real registries, pulls and sandboxes on a busy 2-core machine: generous limits; no test asserts on time.
jest.setTimeout(120_000);

// Sandboxes on OCI images pulled from a registry of the test's own on loopback: the test builds
// its images from Debian's static busybox (no libc in the image at all), pushes them, and the
// runtime pulls them into the node's store and starts sandboxes from them.
const dataDir = runtimeDataDir('oci');
const work = path.join(dataDir, 'work');
const layout = path.join(work, 'layout');
const account = { username: 'alice', password: 'right-password' };
let registry: TestRegistry;
let privateRegistry: TestRegistry;
let runtime: BwrapRuntime;
let box: string;

const storeDir = path.join(dataDir, 'images', 'oci');
const listing = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir).sort() : []);

beforeAll(async () => {
  fs.mkdirSync(work, { recursive: true });
  [registry, privateRegistry] = await Promise.all([startRegistry(path.join(work, 'registry')), startRegistry(path.join(work, 'private'), account)]);
  buildTestImage(layout, 'box', {
    files: { '/marker.txt': 'from the image\n', '/data/readme.txt': 'the working folder\n' },
    env: ['PATH=/bin', 'FOO=from-image', 'IMAGE_ONLY=yes'],
    workingDir: '/data',
  });
  // The same image with one more layer: its first layer is the box's.
  buildTestImage(layout, 'box-plus', { files: { '/extra.txt': 'one more layer\n' }, env: ['PATH=/bin'] }, 'box');
  box = `${registry.address}/test/box:1`;
  pushTestImage(layout, 'box', box);
  pushTestImage(layout, 'box-plus', `${registry.address}/test/box-plus:1`);
  pushTestImage(layout, 'box', `${privateRegistry.address}/team/box:1`, account);
  runtime = testRuntime(dataDir);
});

afterAll(async () => {
  if (runtime) for (const sandbox of await runtime.list()) await runtime.remove(sandbox.id);
  await Promise.all([registry?.close(), privateRegistry?.close()]);
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('a sandbox on a pulled image', () => {
  let sandbox: SandboxHandle;

  beforeAll(async () => {
    await runtime.pullImage(box);
    sandbox = await runtime.start(sandboxSpec({ image: box, envs: [{ name: 'FOO', value: 'mine' }] }));
  });

  test("the agent answers and processes see the image's files, not the host's", async () => {
    expect((await callSandbox(sandbox.socketPath, 'GET', '/health')).status).toBe(200);
    expect((await exec(sandbox.socketPath, 'cat /marker.txt')).stdout).toBe('from the image\n');
    // The host's system (its /usr, Python, libc) is nowhere: the image has busybox alone.
    const host = await exec(sandbox.socketPath, 'ls /usr /lib 2>&1; ls -a /; test -e /usr/bin/python3 && echo python');
    expect(host.stdout).not.toMatch(/python/);
    expect(host.stdout.split('\n')).toEqual(expect.arrayContaining(['bin', 'marker.txt', 'data', 'home', 'tmp', 'etc']));
  });

  test("the image's ENV reaches processes, the sandbox's own envs win, and they start in its WorkingDir", async () => {
    const result = await exec(sandbox.socketPath, 'echo "$FOO $IMAGE_ONLY $PATH $HOME"; pwd; cat readme.txt');
    expect(result.stdout).toBe('mine yes /bin /home/user\n/data\nthe working folder\n');
  });

  test('the image\'s root-owned files are not the user\'s to change, the writable folders are the sandbox\'s own, and the user is unprivileged', async () => {
    const write = await exec(sandbox.socketPath, 'touch /marker.txt /bin/evil /data/x');
    expect(write.exitCode).not.toBe(0);
    expect(write.stderr).toBe('touch: /marker.txt: Permission denied\ntouch: /bin/evil: Permission denied\ntouch: /data/x: Permission denied\n');
    const own = await exec(sandbox.socketPath, 'echo kept > /home/user/a && echo t > /tmp/b && cat /home/user/a; id -u; whoami; grep -E "^(CapEff|NoNewPrivs)" /proc/self/status');
    expect(own.stdout).toMatch(/^kept\n1000\nuser\nCapEff:\s+0+\nNoNewPrivs:\s+1\n$/);
    // The image's files are the root overlay's lower layer, nosuid and nodev: no setuid program or device node of an image gives anything.
    const root = (await exec(sandbox.socketPath, "grep ' / / ' /proc/self/mountinfo")).stdout.trim().split(' ');
    expect(root[5].split(',')).toEqual(expect.arrayContaining(['nosuid', 'nodev']));
    expect(root.slice(-3, -1)).toEqual(['overlay', 'overlay']);
    // The same seccomp filter as on base (mode 2: a filter).
    expect((await exec(sandbox.socketPath, 'grep Seccomp: /proc/self/status')).stdout).toMatch(/^Seccomp:\s+2\n$/);
    // The image's /etc with the sandbox's user (the image has no accounts of its own), none of the host's.
    expect((await exec(sandbox.socketPath, 'cat /etc/passwd; ls /etc/shadow')).stdout).toBe('user:x:1000:1000:sandbox user:/home/user:/bin/sh\n');
    // No variable of the agent's host loader reaches the user's processes.
    expect((await exec(sandbox.socketPath, 'env')).stdout).not.toMatch(/LD_|hangar\/lib/);
  });

  test("the agent's file and search routes work on the image (content search without ripgrep in it)", async () => {
    expect((await callSandbox(sandbox.socketPath, 'PUT', '/filesystem/workspace/notes.txt', { content: 'needle here\n' })).status).toBe(200);
    const read = await callSandbox(sandbox.socketPath, 'GET', '/filesystem/workspace/notes.txt');
    expect(read.text).toContain('needle here');
    const found = await callSandbox(sandbox.socketPath, 'GET', '/filesystem-content-search/workspace?query=needle');
    expect(found.status).toBe(200);
    expect(JSON.stringify(found.json)).toContain('notes.txt');
    // The image's own files are readable through the API, and read-only.
    expect((await callSandbox(sandbox.socketPath, 'GET', '/filesystem/marker.txt')).text).toContain('from the image');
    expect((await callSandbox(sandbox.socketPath, 'PUT', '/filesystem/marker.txt', { content: 'x' })).status).toBeGreaterThanOrEqual(400);
  });

  test('two sandboxes on one image share one unpacked copy of it on disk', async () => {
    const other = await runtime.start(sandboxSpec({ image: box }));
    expect(await runtime.pullImage(box)).toMatchObject({ digest: (await runtime.findImage(box))!.digest });
    const stored = (await runtime.findImage(box))!;
    expect(listing(path.join(storeDir, 'unpacked'))).toEqual([stored.digest.slice('sha256:'.length)]);
    // The very file on the host, seen by both sandboxes.
    const hostInode = fs.statSync(path.join(stored.rootfs, 'marker.txt')).ino;
    for (const { socketPath } of [sandbox, other]) expect((await exec(socketPath, 'stat -c %i /marker.txt')).stdout.trim()).toBe(String(hostInode));
    // Image storage: the image once (its blobs and rootfs), counted for each sandbox without copying it.
    const onDisk = await diskUsageBytes([storeDir]);
    expect(stored.storedBytes).toBeGreaterThan(fs.statSync('/bin/busybox').size);
    expect(onDisk).toBeLessThan(2 * stored.storedBytes);
    expect(await runtime.imageStorageBytes(other.id, box)).toBeGreaterThanOrEqual(stored.storedBytes);
    await runtime.remove(other.id);
  });
});

test("new envs reach a sandbox on an image over the image's Env, and a restart runs from the same image", async () => {
  await runtime.pullImage(box);
  const spec = sandboxSpec({ image: box });
  const first = await runtime.start(spec);
  await runtime.updateEnvs(spec.id, [{ name: 'IMAGE_ONLY', value: 'overridden' }]);
  expect((await exec(first.socketPath, 'echo "$FOO $IMAGE_ONLY"')).stdout).toBe('from-image overridden\n');
  await runtime.stop(spec.id);
  const again = await runtime.start({ ...spec, envs: [{ name: 'IMAGE_ONLY', value: 'overridden' }] });
  expect((await exec(again.socketPath, 'cat /marker.txt; echo "$FOO $IMAGE_ONLY"')).stdout).toBe('from the image\nfrom-image overridden\n');
  await runtime.remove(spec.id);
});

test('a reference by digest pulls the same image, and a sandbox starts from it', async () => {
  const { digest } = await runtime.pullImage(box);
  const byDigest = `${registry.address}/test/box@${digest}`;
  expect((await runtime.pullImage(byDigest)).digest).toBe(digest);
  const sandbox = await runtime.start(sandboxSpec({ image: byDigest }));
  expect((await exec(sandbox.socketPath, 'cat /marker.txt')).stdout).toBe('from the image\n');
  await runtime.remove(sandbox.id);
  const missing = `${registry.address}/test/box@sha256:${'0'.repeat(64)}`;
  await expect(runtime.pullImage(missing)).rejects.toMatchObject({ kind: 'not_found' });
});

test('pulls of one new image at once make one copy, with no staging left', async () => {
  buildTestImage(layout, 'twice', { files: { '/twice.txt': 'pulled twice at once\n' }, env: ['PATH=/bin'] }, 'box');
  pushTestImage(layout, 'twice', `${registry.address}/test/twice:1`);
  const unpackedBefore = new Set(listing(path.join(storeDir, 'unpacked')));
  const [a, b] = await Promise.all([runtime.pullImage(`${registry.address}/test/twice:1`), runtime.pullImage(`${registry.address}/test/twice:1`)]);
  expect(a.digest).toBe(b.digest);
  // Listings include dot entries: an unpack's staging folder left behind would show.
  expect(listing(path.join(storeDir, 'unpacked')).filter((name) => !unpackedBefore.has(name))).toEqual([a.digest.slice('sha256:'.length)]);
  expect(listing(path.join(storeDir, 'pulls'))).toEqual([]);
});

test("an image laid out as Debian's: merged /usr, its own accounts, /home and /var entered around the sandbox's folders, its links kept inside", async () => {
  buildTestImage(layout, 'debianish', {
    mergedUsr: true,
    files: {
      '/etc/passwd': 'root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\n',
      '/etc/group': 'root:x:0:\nnode:x:1000:\n',
      '/home/node/notes.txt': 'the image user\'s\n',
      '/opt/tool/version': '1.0\n',
      '/var/cache/tool/state': 'cached\n',
    },
    // A link where the sandbox puts its own file, one leading out of the image: neither is followed on the host.
    links: { '/var/run': '/run', '/etc/hosts': '/proc/self/mounts', '/etc/hangar': '/root' },
    env: ['PATH=/usr/bin:/bin'],
    workingDir: '/home/node',
    user: 'node',
  });
  const image = `${registry.address}/test/debianish:1`;
  pushTestImage(layout, 'debianish', image);
  await runtime.pullImage(image);
  const sandbox = await runtime.start(sandboxSpec({ image }));
  const seen = await exec(sandbox.socketPath, 'whoami; pwd; cat notes.txt /opt/tool/version /var/cache/tool/state; ls /home; touch /var/tmp/w /home/user/w && echo writable; readlink /bin; readlink /var/run; cat /etc/passwd; head -1 /etc/hosts');
  expect(seen.stdout).toBe(
    [
      // The image's `User` is kept, not used: the sandbox's own user, in place of the image's account with its uid.
      'user',
      '/home/node',
      "the image user's",
      '1.0',
      'cached',
      'node',
      'user',
      'writable',
      'usr/bin',
      '/run',
      'root:x:0:0:root:/root:/bin/sh',
      'user:x:1000:1000:sandbox user:/home/user:/bin/sh',
      `127.0.0.1\tlocalhost ${sandbox.id}`,
      '',
    ].join('\n'),
  );
  expect((await runtime.findImage(image))!.config).toMatchObject({ user: 'node', workingDir: '/home/node' });
  await runtime.remove(sandbox.id);
});

test('an image sharing a layer with a stored one adds only its own blobs to the store', async () => {
  await runtime.pullImage(box);
  const blobs = path.join(storeDir, 'blobs', 'sha256');
  const before = new Set(listing(blobs));
  const plus = await runtime.pullImage(`${registry.address}/test/box-plus:1`);
  const added = listing(blobs).filter((blob) => !before.has(blob));
  // Its manifest, its config and its one new layer; the busybox layer is the one already there.
  expect(added).toHaveLength(3);
  const addedBytes = added.reduce((sum, blob) => sum + fs.statSync(path.join(blobs, blob)).size, 0);
  expect(addedBytes).toBeLessThan(fs.statSync('/bin/busybox').size / 10);
  const sandbox = await runtime.start(sandboxSpec({ image: `${registry.address}/test/box-plus:1` }));
  expect((await exec(sandbox.socketPath, 'cat /extra.txt /marker.txt')).stdout).toBe('one more layer\nfrom the image\n');
  expect(plus.digest).not.toBe((await runtime.findImage(box))!.digest);
  await runtime.remove(sandbox.id);
});

describe('clear errors', () => {
  test('a malformed reference is refused naming it, for a pull and for a start', async () => {
    await expect(runtime.pullImage('Team//box')).rejects.toThrow(SandboxSpecError);
    await expect(runtime.pullImage('Team//box')).rejects.toThrow("image reference 'Team//box' is malformed");
    await expect(runtime.start(sandboxSpec({ image: `${registry.address}/box:bad tag` }))).rejects.toThrow(/is malformed: it contains white space/);
  });

  test('an unknown image is not found, and nothing of it is kept', async () => {
    const refsBefore = listing(path.join(storeDir, 'refs'));
    const unknown = `${registry.address}/test/nothing-here:1`;
    const failure = await runtime.pullImage(unknown).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ImagePullError);
    expect(failure).toMatchObject({ kind: 'not_found' });
    expect((failure as Error).message).toMatch(new RegExp(`^image '${unknown}' was not found in its registry: .*manifest unknown`));
    expect(listing(path.join(storeDir, 'refs'))).toEqual(refsBefore);
    expect(listing(path.join(storeDir, 'pulls'))).toEqual([]);
    // Never pulled on this node: a start says so before anything starts.
    await expect(runtime.start(sandboxSpec({ image: unknown }))).rejects.toThrow(`image '${unknown}' is not on this node: pull it first`);
  });

  test('a private registry wants its credentials: none or wrong ones fail with the reason, the right ones pull', async () => {
    const image = `${privateRegistry.address}/team/box:1`;
    for (const credentials of [undefined, { username: 'alice', password: 'wrong' }]) {
      const failure = await runtime.pullImage(image, credentials ? { credentials } : {}).catch((err: unknown) => err);
      expect(failure).toMatchObject({ kind: 'unauthorized', reason: expect.stringMatching(/unauthorized: authentication required/) });
      expect((failure as Error).message).toContain(`image '${image}' was refused by its registry (credentials missing or wrong)`);
    }
    const pulled = await runtime.pullImage(image, { credentials: account });
    // The same image as the public one: the same digest, so the same unpacked copy.
    expect(pulled.digest).toBe((await runtime.findImage(box))!.digest);
    // The credentials were written for the pull alone, and are gone with it.
    expect(listing(path.join(storeDir, 'pulls'))).toEqual([]);
  });

  test('a registry that does not answer is unreachable', async () => {
    const closed = await startRegistry(path.join(work, 'closed'));
    await closed.close();
    await expect(runtime.pullImage(`${closed.address}/test/box:1`)).rejects.toMatchObject({ kind: 'unreachable' });
  });
});
