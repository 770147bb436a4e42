import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { applyLayers } from '../../../runtime/layer-merge';

// Layers as extracted folders on a real file system, merged into a rootfs by applyLayers.
let root: string;

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-layer-merge-'));
});

afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

/** A layer folder from path -> content ('/' at the end: a folder; '-> target': a symbolic link). */
function layer(name: string, entries: Record<string, string>): string {
  const dir = path.join(root, name);
  fs.mkdirSync(dir);
  for (const [entry, content] of Object.entries(entries)) {
    const target = path.join(dir, entry);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    if (entry.endsWith('/')) fs.mkdirSync(target, { recursive: true });
    else if (content.startsWith('-> ')) fs.symlinkSync(content.slice(3), target);
    else fs.writeFileSync(target, content);
  }
  return dir;
}

/** Every entry under a folder, as `path` (folders end in '/', links show their target) -> content. */
function tree(dir: string, prefix = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const rel = `${prefix}${entry.name}`;
    const full = path.join(dir, entry.name);
    if (entry.isSymbolicLink()) out[rel] = `-> ${fs.readlinkSync(full)}`;
    else if (entry.isDirectory()) Object.assign(out, { [`${rel}/`]: '' }, tree(full, `${rel}/`));
    else out[rel] = fs.readFileSync(full, 'utf8');
  }
  return out;
}

const rootfs = () => path.join(root, 'rootfs');

test('a whiteout removes a file or a folder of the layers below, and a later layer can bring it back', async () => {
  const base = layer('0', { 'etc/a': 'a', 'etc/b': 'b', 'opt/tool/bin': 'x', 'keep': 'k' });
  const upper = layer('1', { 'etc/.wh.a': '', '.wh.opt': '', 'new': 'n' });
  const again = layer('2', { 'etc/a': 'a2' });
  await applyLayers([base, upper, again], rootfs());
  expect(tree(rootfs())).toEqual({ 'etc/': '', 'etc/a': 'a2', 'etc/b': 'b', keep: 'k', new: 'n' });
});

test("an opaque folder hides everything below it but keeps its own layer's entries", async () => {
  const base = layer('0', { 'var/lib/old': 'o', 'var/lib/deep/x': 'x', 'var/other': 'v' });
  const upper = layer('1', { 'var/lib/.wh..wh..opq': '', 'var/lib/fresh': 'f' });
  await applyLayers([base, upper], rootfs());
  expect(tree(rootfs())).toEqual({ 'var/': '', 'var/lib/': '', 'var/lib/fresh': 'f', 'var/other': 'v' });
});

test('an entry replaces one of another type below; folders on both sides are merged', async () => {
  const base = layer('0', { 'a/': '', 'a/in-a': '1', 'b': 'file', 'c/': '', 'c/in-c': '2', 'd': 'file' });
  const upper = layer('1', { 'a': 'now a file', 'b/': '', 'b/in-b': '3', 'c/more': '4', 'd': '-> c' });
  await applyLayers([base, upper], rootfs());
  expect(tree(rootfs())).toEqual({ a: 'now a file', 'b/': '', 'b/in-b': '3', 'c/': '', 'c/in-c': '2', 'c/more': '4', d: '-> c' });
});

test('a link below is replaced, never followed, by a folder of a layer above; whiteouts never reach the rootfs', async () => {
  const outside = path.join(root, 'outside');
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, 'victim'), 'safe');
  const base = layer('0', { 'escape': `-> ${outside}`, 'lone/.wh.ghost': '', '.wh..wh..opq': '' });
  const upper = layer('1', { 'escape/victim': 'overwritten?', 'escape/.wh.victim': '', 'moved/.wh.nothing': '' });
  await applyLayers([base, upper], rootfs());
  expect(fs.readFileSync(path.join(outside, 'victim'), 'utf8')).toBe('safe');
  expect(tree(rootfs())).toEqual({ 'escape/': '', 'escape/victim': 'overwritten?', 'lone/': '', 'moved/': '' });
});

test("a folder on both sides takes the upper layer's mode", async () => {
  const base = layer('0', { 'shared/': '', 'shared/x': 'x' });
  const upper = layer('1', { 'shared/': '', 'shared/y': 'y' });
  fs.chmodSync(path.join(base, 'shared'), 0o755);
  fs.chmodSync(path.join(upper, 'shared'), 0o1777);
  await applyLayers([base, upper], rootfs());
  expect(fs.statSync(path.join(rootfs(), 'shared')).mode & 0o7777).toBe(0o1777);
  expect(tree(rootfs())).toEqual({ 'shared/': '', 'shared/x': 'x', 'shared/y': 'y' });
});

test('no layers make an empty rootfs', async () => {
  await applyLayers([], rootfs());
  expect(tree(rootfs())).toEqual({});
});
