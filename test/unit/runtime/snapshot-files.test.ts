import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { captureTree, removeTree, seedTree } from '../../../runtime/snapshot-files';

// The node's copies of a sandbox's files, on a real file system (cp and du are real).
let root: string;
let fsRoot: string;
let snapshot: string;

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-snapshot-files-'));
  fsRoot = path.join(root, 'sandbox', 'fs');
  snapshot = path.join(root, 'snapshots', 'id', 'fs');
  fs.mkdirSync(path.join(fsRoot, 'home', 'deep'), { recursive: true });
  fs.writeFileSync(path.join(fsRoot, 'home', 'deep', 'a.txt'), 'a'.repeat(100_000));
  fs.writeFileSync(path.join(fsRoot, 'home', 'script.sh'), '#!/bin/sh\n', { mode: 0o750 });
  fs.symlinkSync('deep/a.txt', path.join(fsRoot, 'home', 'link'));
});

afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

test('a capture copies the tree whole (modes, links) and answers its size; asked again, it answers the first copy', async () => {
  const size = await captureTree(fsRoot, snapshot);
  expect(size).toBeGreaterThanOrEqual(100_000);
  expect(fs.readFileSync(path.join(snapshot, 'home', 'deep', 'a.txt'), 'utf8')).toHaveLength(100_000);
  expect(fs.statSync(path.join(snapshot, 'home', 'script.sh')).mode & 0o777).toBe(0o750);
  expect(fs.readlinkSync(path.join(snapshot, 'home', 'link'))).toBe('deep/a.txt');
  fs.writeFileSync(path.join(fsRoot, 'home', 'later.txt'), 'later');
  expect(await captureTree(fsRoot, snapshot)).toBe(size);
  expect(fs.existsSync(path.join(snapshot, 'home', 'later.txt'))).toBe(false);
});

test('what a copy cut short left is cleared, never taken for the snapshot', async () => {
  const leftover = `${snapshot}.partial-dead`;
  fs.mkdirSync(path.join(leftover, 'home'), { recursive: true });
  fs.writeFileSync(path.join(leftover, 'home', 'half.txt'), 'half');
  await captureTree(fsRoot, snapshot);
  expect(fs.readdirSync(path.dirname(snapshot))).toEqual(['fs']);
  expect(fs.existsSync(path.join(snapshot, 'home', 'half.txt'))).toBe(false);
});

test('a seed gives a new sandbox the files; a sandbox that has files keeps them', async () => {
  await captureTree(fsRoot, snapshot);
  const fork = path.join(root, 'fork', 'fs');
  await seedTree(snapshot, fork);
  expect(fs.readFileSync(path.join(fork, 'home', 'deep', 'a.txt'), 'utf8')).toHaveLength(100_000);
  fs.writeFileSync(path.join(fork, 'home', 'deep', 'a.txt'), 'the fork wrote this');
  await seedTree(snapshot, fork);
  expect(fs.readFileSync(path.join(fork, 'home', 'deep', 'a.txt'), 'utf8')).toBe('the fork wrote this');
  expect(fs.readFileSync(path.join(snapshot, 'home', 'deep', 'a.txt'), 'utf8')).toHaveLength(100_000);
});

test('missing sources are errors that say so; removal of nothing is fine', async () => {
  await expect(captureTree(path.join(root, 'none'), snapshot)).rejects.toThrow(/no files on this node/);
  await expect(seedTree(snapshot, path.join(root, 'fork', 'fs'))).rejects.toThrow(/not on this node/);
  await removeTree(snapshot);
  await captureTree(fsRoot, snapshot);
  await removeTree(snapshot);
  expect(fs.existsSync(path.dirname(snapshot))).toBe(false);
});
