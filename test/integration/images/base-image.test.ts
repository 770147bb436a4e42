import fs from 'node:fs';
import path from 'node:path';
import type { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import { diskUsageBytes } from '../../../runtime/disk-usage';
import type { StoredImage } from '../../../runtime/image-store';
import type { SandboxHandle } from '../../../runtime/sandbox-runtime';
import { exec, sandboxSpec, testRuntime } from '../../helpers/sandbox-runtime';
import { testStack } from '../../setup/stack';

// The first build of base-image (mmdebstrap from Debian's mirror) happens in the global set-up;
// a run on a fresh data folder may still build it here.
jest.setTimeout(600_000);

// The suite's data folder: base-image is built there once per run folder, as a node builds it once.
const dataDir = testStack().config.dataDir;
let runtime: BwrapRuntime;
let image: StoredImage;
const sandboxes: SandboxHandle[] = [];

beforeAll(async () => {
  runtime = testRuntime(dataDir);
  image = await runtime.ensureBaseImage();
  for (let i = 0; i < 2; i++) sandboxes.push(await runtime.start(sandboxSpec({ image: 'blaxel/base-image:latest' })));
});

afterAll(async () => {
  for (const sandbox of sandboxes) await runtime?.remove(sandbox.id);
});

const run = async (sandbox: SandboxHandle, command: string) => {
  const result = await exec(sandbox.socketPath, command);
  return { code: result.exitCode, out: result.stdout.trim(), err: result.stderr.trim() };
};

test("base-image is a stored Debian tree with a shell, Python 3, Node, coreutils, CA certificates and curl", async () => {
  expect(image.storedBytes).toBeGreaterThan(50 * 1024 * 1024);
  for (const program of ['bin/sh', 'usr/bin/python3', 'usr/bin/node', 'usr/bin/curl', 'usr/bin/ls', 'etc/ssl/certs/ca-certificates.crt']) {
    expect(fs.existsSync(path.join(image.rootfs, program))).toBe(true);
  }
  // Found again without building: the node has it.
  expect((await runtime.findBaseImage())?.digest).toBe(image.digest);
});

test("a sandbox on base-image runs the image's programs, not the host's", async () => {
  const [sandbox] = sandboxes;
  const imageDebian = fs.readFileSync(path.join(image.rootfs, 'etc', 'debian_version'), 'utf8').trim();
  expect((await run(sandbox, 'cat /etc/debian_version')).out).toBe(imageDebian);
  // A program only the host has (the platform's own tools) is not there.
  expect(fs.existsSync('/usr/bin/skopeo')).toBe(true);
  expect((await run(sandbox, 'test -e /usr/bin/skopeo; echo $?')).out).toBe('1');
  // The image's Python and Node: Debian's, whatever the host's are.
  const python = await run(sandbox, 'python3 -c "import sys, ssl; print(sys.version_info[0])"');
  expect(python).toMatchObject({ code: 0, out: '3' });
  const node = await run(sandbox, 'node -e "console.log(process.version)"');
  expect(node.code).toBe(0);
  expect(node.out).toMatch(/^v\d+\./);
  expect(node.out).not.toBe(process.version);
  expect((await run(sandbox, 'readlink -f $(command -v sh) && id -un && curl --version | head -1')).out).toMatch(/^\/usr\/bin\/dash\nuser\ncurl /);
});

test("two sandboxes share the image's blocks on disk, and each one's writes stay its own", async () => {
  const [first, second] = sandboxes;
  expect((await run(first, 'echo mine > ~/note && dd if=/dev/zero of=/tmp/blob bs=1M count=4 status=none && cat ~/note')).out).toBe('mine');
  expect((await run(second, 'cat ~/note; test -e /tmp/blob; echo $?')).out).toBe('1');
  // Nothing of the image is written by a sandbox: its root-owned files are not the sandbox user's.
  expect((await run(first, 'touch /usr/bin/x 2>&1; echo $?')).out).toMatch(/Permission denied\n1$/);

  const layers = sandboxes.map((s) => path.join(dataDir, 'sandboxes', s.id, 'fs'));
  const imageBytes = await diskUsageBytes([image.rootfs]);
  const layerBytes = await Promise.all(layers.map((layer) => diskUsageBytes([layer])));
  // The two sandboxes together use the image's blocks once, plus their own small layers.
  expect(await diskUsageBytes([image.rootfs, ...layers])).toBeLessThan(imageBytes + layerBytes[0] + layerBytes[1] + 64 * 1024);
  expect(layerBytes[0]).toBeGreaterThanOrEqual(4 * 1024 * 1024);
  expect(layerBytes[1]).toBeLessThan(imageBytes / 20);
  // Image storage metering: the image's stored size plus the sandbox's own layer.
  // (The layer's folders, without the folder holding them.)
  const metered = await runtime.imageStorageBytes(first.id, 'base-image');
  expect(metered).toBeGreaterThanOrEqual(image.storedBytes + 4 * 1024 * 1024);
  expect(metered).toBeLessThanOrEqual(image.storedBytes + layerBytes[0]);
});
