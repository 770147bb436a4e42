import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import { buildTestImage, pushTestImage, startRegistry, type TestRegistry } from '../../helpers/oci-registry';
import { exec, runtimeDataDir, sandboxSpec, testRuntime } from '../../helpers/sandbox-runtime';

// Real registry, skopeo, tar and umoci on a busy 2-core machine: generous limits; no test asserts on time.
jest.setTimeout(180_000);

// A pull unpacks its layers itself (each extracted while it downloads, then merged applying
// whiteouts): the rootfs must be the one umoci's unpack makes of the same image, file for file.
const dataDir = runtimeDataDir('oci-layers');
const work = path.join(dataDir, 'work');
const layout = path.join(work, 'layout');
let registry: TestRegistry;
let runtime: BwrapRuntime;

beforeAll(async () => {
  fs.mkdirSync(work, { recursive: true });
  registry = await startRegistry(path.join(work, 'registry'));
  buildTestImage(layout, 'l1', {
    files: { '/etc/removed.txt': 'gone later\n', '/dir/sub/file.txt': 'in a folder removed later\n', '/keep.txt': 'kept\n', '/tool': '#!/bin/sh\n' },
    randomFiles: { '/data/big': 3 * 1024 * 1024 },
    links: { '/abs-link': '/etc/removed.txt', '/rel-link': 'keep.txt' },
    hardLinks: { '/keep-again.txt': '/keep.txt' },
    modes: { '/tool': 0o4755, '/dir': 0o1777 },
    env: ['PATH=/bin'],
  });
  buildTestImage(layout, 'l2', { files: { '/added.txt': 'second layer\n', '/keep.txt': 'kept, changed\n' }, remove: ['/etc/removed.txt', '/dir/sub'], env: ['PATH=/bin'] }, 'l1');
  buildTestImage(layout, 'l3', { files: { '/dir/sub/new.txt': 'a folder whited out, then made again\n' }, remove: ['/added.txt'], env: ['PATH=/bin'] }, 'l2');
  pushTestImage(layout, 'l3', `${registry.address}/test/layers:3`);
  runtime = testRuntime(dataDir);
});

afterAll(async () => {
  if (runtime) for (const sandbox of await runtime.list()) await runtime.remove(sandbox.id);
  await registry?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** Every entry of a tree with what identifies it: type, mode, owner, content or link target, link count; file times too. */
function describeTree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const name of fs.readdirSync(path.join(dir, rel)).sort()) {
      const entry = path.join(rel, name);
      const full = path.join(dir, entry);
      const stat = fs.lstatSync(full);
      const owner = `${(stat.mode & 0o7777).toString(8)} ${stat.uid}:${stat.gid}`;
      if (stat.isSymbolicLink()) out[entry] = `link ${fs.readlinkSync(full)}`;
      else if (stat.isDirectory()) {
        out[entry] = `dir ${owner}`;
        walk(entry);
      } else out[entry] = `file ${owner} n${stat.nlink} ${stat.mtimeMs} ${createHash('sha256').update(fs.readFileSync(full)).digest('hex')}`;
    }
  };
  walk('');
  return out;
}

test('a pulled image of three layers with whiteouts is the tree umoci unpacks of it, unpacked by its layers', async () => {
  const image = await runtime.pullImage(`${registry.address}/test/layers:3`);
  const unpacked = path.join(dataDir, 'images', 'oci', 'unpacked', image.digest.slice('sha256:'.length));
  expect(JSON.parse(fs.readFileSync(path.join(unpacked, 'image.json'), 'utf8')).unpackedWith).toBe('layers');
  const ours = describeTree(path.join(unpacked, 'rootfs'));

  const reference = path.join(work, 'umoci-rootfs');
  execFileSync('umoci', ['raw', 'unpack', '--image', `${layout}:l3`, reference], { stdio: 'ignore' });
  expect(ours).toEqual(describeTree(reference));

  // What the whiteouts did, spelt out: deleted across layers, a folder deleted then made again.
  expect(Object.keys(ours).filter((entry) => /\.wh\./.test(entry))).toEqual([]);
  expect(ours).not.toHaveProperty('etc/removed.txt');
  expect(ours).not.toHaveProperty('added.txt');
  expect(ours).not.toHaveProperty(['dir/sub/file.txt']);
  expect(ours['dir/sub/new.txt']).toMatch(/^file 644 0:0/);
  expect(ours.tool).toMatch(/^file 4755 /);
  expect(ours.dir).toMatch(/^dir 1777 /);
  expect(fs.readFileSync(path.join(unpacked, 'rootfs', 'keep.txt'), 'utf8')).toBe('kept, changed\n');
});

test("a sandbox on it sees the last layer's files and none of the deleted ones", async () => {
  const sandbox = await runtime.start(sandboxSpec({ image: `${registry.address}/test/layers:3` }));
  const seen = await exec(sandbox.socketPath, 'cat /keep.txt /dir/sub/new.txt; for f in /etc/removed.txt /added.txt /dir/sub/file.txt; do test -e $f && echo "still $f"; done; true');
  expect(seen.stdout).toBe('kept, changed\na folder whited out, then made again\n');
});

test('a layer the store already has is extracted from the store, not the download: the same tree', async () => {
  // Pushed under a second name, its blobs are all on the node: skopeo writes none of them again.
  pushTestImage(layout, 'l2', `${registry.address}/test/layers:2`);
  const first = await runtime.pullImage(`${registry.address}/test/layers:2`);
  const unpacked = path.join(dataDir, 'images', 'oci', 'unpacked', first.digest.slice('sha256:'.length));
  expect(JSON.parse(fs.readFileSync(path.join(unpacked, 'image.json'), 'utf8')).unpackedWith).toBe('layers');
  const reference = path.join(work, 'umoci-rootfs-2');
  execFileSync('umoci', ['raw', 'unpack', '--image', `${layout}:l2`, reference], { stdio: 'ignore' });
  expect(describeTree(path.join(unpacked, 'rootfs'))).toEqual(describeTree(reference));
});
