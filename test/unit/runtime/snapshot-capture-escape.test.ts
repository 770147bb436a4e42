import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { captureTree } from '../../../runtime/snapshot-files';

/**
 * A sandbox swapping its folders for symlinks while its files are captured. cp walks the source
 * by path names, so root's cp, between looking at a folder and listing it, or inside it, goes
 * through the link: the host's files land in the snapshot, which the sandbox's forks then read.
 * Here `host/` stands for the host's `/` (a real `/` would have the unconfined cp copy /proc and
 * /sys): it holds entries named as the swapped folders', each saying HOST-SECRET. Two threads swap
 * the folders in a loop for the whole copy (one thread alone rarely meets cp's moment on two
 * cores); what varies is how many folders, how deep, the link's form and how many entries each
 * has. Against plain `cp -a` (the copy before the fix) some capture leaks; against the node's
 * capture (cp behind bubblewrap, real) none does.
 */
const SECRET = 'HOST-SECRET';
const SWAPPERS = 2;

let root: string;
let host: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-capture-escape-'));
  host = path.join(root, 'host');
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

/** Swaps each folder for a symlink to its target and back, over and over, until told to stop. */
const SWAPPER = `
const fs = require('node:fs');
const { workerData } = require('node:worker_threads');
const { swaps, stop } = workerData;
const flag = new Int32Array(stop);
const attempt = (step) => { try { step(); } catch {} };
while (Atomics.load(flag, 0) === 0) {
  for (const { folder, target } of swaps) {
    attempt(() => fs.renameSync(folder, folder + '.aside'));
    attempt(() => fs.symlinkSync(target, folder));
    attempt(() => fs.unlinkSync(folder));
    attempt(() => fs.renameSync(folder + '.aside', folder));
  }
}
`;

type Swap = { folder: string; target: string };

async function whileSwapping<T>(swaps: Swap[], copy: () => Promise<T>): Promise<T> {
  const stop = new SharedArrayBuffer(4);
  const threads = Array.from({ length: SWAPPERS }, (_, n) => new Worker(SWAPPER, { eval: true, workerData: { swaps: swaps.filter((_, i) => i % SWAPPERS === n), stop } }));
  const exited = threads.map((thread) => new Promise((resolve) => thread.once('exit', resolve)));
  await Promise.all(threads.map((thread) => new Promise((resolve) => thread.once('online', resolve))));
  try {
    return await copy();
  } finally {
    Atomics.store(new Int32Array(stop), 0, 1);
    await Promise.all(exited);
  }
}

/** Files of the copy that came from `host/`, with what they say. */
function leaked(dir: string): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...leaked(file));
    else if (entry.isFile() && fs.readFileSync(file, 'utf8').includes(SECRET)) found.push(`${file}: ${fs.readFileSync(file, 'utf8')}`);
  }
  return found;
}

const swapsArbitrary = fc.record({
  folders: fc.integer({ min: 8, max: 16 }),
  // Each swapped folder: home/d<n>/s1[/s2[/s3]].
  depth: fc.integer({ min: 1, max: 3 }),
  link: fc.constantFrom<'absolute' | 'relative'>('absolute', 'relative'),
  entries: fc.integer({ min: 8, max: 24 }),
});

/** A sandbox's layer with `folders` folders of `entries` files each (the host has a twin of each file), and their swaps. */
function layer(round: number, { folders, depth, link, entries }: { folders: number; depth: number; link: 'absolute' | 'relative'; entries: number }) {
  const fsRoot = path.join(root, `sandbox-${round}`, 'fs');
  fs.mkdirSync(host, { recursive: true });
  for (let i = 0; i < entries; i++) fs.writeFileSync(path.join(host, `e${i}`), `${SECRET} ${i}`);
  const swaps: Swap[] = [];
  for (let n = 0; n < folders; n++) {
    const folder = path.join(fsRoot, 'home', `d${n}`, ...Array.from({ length: depth }, (_, i) => `s${i + 1}`));
    fs.mkdirSync(folder, { recursive: true });
    for (let i = 0; i < entries; i++) fs.writeFileSync(path.join(folder, `e${i}`), `the sandbox's own ${i}`);
    swaps.push({ folder, target: link === 'absolute' ? host : path.relative(path.dirname(folder), host) });
  }
  fs.writeFileSync(path.join(fsRoot, 'home', 'notes.txt'), 'the sandbox wrote this');
  return { fsRoot, swaps };
}

/** The copy before the fix: root's plain `cp -a` of the live tree, complaints ignored as for a live sandbox. */
function plainCopy(from: string, to: string): Promise<void> {
  fs.mkdirSync(path.dirname(to), { recursive: true });
  return new Promise((resolve) => execFile('cp', ['-a', '--reflink=auto', '--', from, to], () => resolve()));
}

test("the hole: plain cp -a follows folders swapped for symlinks during the copy into the host's files", async () => {
  let round = 0;
  const noLeak = fc.asyncProperty(swapsArbitrary, async (generated) => {
    const { fsRoot, swaps } = layer(round, generated);
    const snapshot = path.join(root, 'snapshots', String(round++), 'fs');
    await whileSwapping(swaps, () => plainCopy(fsRoot, snapshot));
    expect(leaked(snapshot)).toEqual([]);
  });
  // Some generated capture copies host files: the swaps do open the hole the fix closes.
  const outcome = await fc.check(noLeak, { numRuns: 10, endOnFailure: true });
  expect(outcome.failed).toBe(true);
  expect(String(outcome.errorInstance)).toContain(SECRET);
}, 60_000);

test("closed: the node's capture (cp behind bubblewrap) never copies a file from outside the sandbox's layer, whatever is swapped", async () => {
  let round = 0;
  await fc.assert(
    fc.asyncProperty(swapsArbitrary, async (generated) => {
      const { fsRoot, swaps } = layer(round, generated);
      const snapshot = path.join(root, 'snapshots', String(round++), 'fs');
      await whileSwapping(swaps, () => captureTree(fsRoot, snapshot));
      expect(leaked(snapshot)).toEqual([]);
      // The rest of the layer is captured as ever, and the folders are back in place.
      expect(fs.readFileSync(path.join(snapshot, 'home', 'notes.txt'), 'utf8')).toBe('the sandbox wrote this');
      for (const { folder } of swaps) expect(fs.lstatSync(folder).isDirectory()).toBe(true);
    }),
    { numRuns: 15 },
  );
}, 120_000);
