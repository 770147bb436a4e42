import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
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

test("a seed racing the snapshot's deletion gives the whole tree or refuses as gone, never part of it", async () => {
  // Many files, so that a deletion can land while cp is between them.
  for (let i = 0; i < 400; i++) fs.writeFileSync(path.join(fsRoot, 'home', `f${i}.txt`), String(i));
  let round = 0;
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 0, max: 15 }), async (deleteAfterMs) => {
      const own = path.join(root, `snapshots-${round}`, 'id', 'fs');
      const fork = path.join(root, `fork-${round++}`, 'fs');
      await captureTree(fsRoot, own);
      const deletion = new Promise((resolve) => setTimeout(resolve, deleteAfterMs)).then(() => removeTree(own));
      const seeded = await seedTree(own, fork).then(
        () => 'copied',
        (err: Error) => err.message,
      );
      await deletion;
      if (seeded === 'copied') expect(fs.readdirSync(path.join(fork, 'home')).length).toBe(403);
      else expect(seeded).toMatch(/the snapshot's files are not on this node/);
      expect(fs.existsSync(fork) || seeded !== 'copied').toBe(true);
    }),
    { numRuns: 15 },
  );
}, 60_000);
