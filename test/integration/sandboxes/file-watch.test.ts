import fc from 'fast-check';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FileEvent } from '../../../sandbox-agent/contract/search';
import { FolderWatch } from '../../../sandbox-agent/file-watch';
import { eventually } from '../../helpers/workers';

// The watch of /watch/filesystem on this machine's inotify: generated sequences of file
// operations, each awaited until its events came, must read back as exactly the ops the
// reference reports for them (CREATE, WRITE, CHMOD, RENAME, REMOVE), never another.
jest.setTimeout(180_000);

let scratch: string;
beforeAll(() => (scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-watch-'))));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

type Step = { kind: 'create' | 'write' | 'chmod' | 'remove' | 'rename' | 'mkdir'; a: number; b: number };

const NAMES = ['f0', 'f1', 'f2', 'd0/f3', 'd0/f4'];

/** What the step does to the tree, and the events it must give (op, folder, name); undefined: not doable now. */
function apply(root: string, step: Step): string[] | undefined {
  const a = NAMES[step.a % NAMES.length];
  const b = NAMES[step.b % NAMES.length];
  const at = (name: string) => path.join(root, name);
  const event = (op: string, name: string) => `${op} ${path.posix.dirname(`/w/${name}`)} ${path.posix.basename(name)}`;
  const exists = (name: string) => fs.existsSync(at(name));
  const folderReady = (name: string) => fs.existsSync(path.dirname(at(name)));
  switch (step.kind) {
    case 'mkdir':
      if (exists('d0')) return undefined;
      fs.mkdirSync(at('d0'));
      return [event('CREATE', 'd0')];
    case 'create':
      if (exists(a) || !folderReady(a)) return undefined;
      fs.writeFileSync(at(a), 'new');
      return [event('CREATE', a), event('WRITE', a)];
    case 'write':
      if (!exists(a)) return undefined;
      fs.appendFileSync(at(a), 'more');
      return [event('WRITE', a)];
    case 'chmod': {
      if (!exists(a)) return undefined;
      fs.chmodSync(at(a), (fs.statSync(at(a)).mode & 0o777) === 0o600 ? 0o644 : 0o600);
      return [event('CHMOD', a)];
    }
    case 'remove':
      if (!exists(a)) return undefined;
      fs.unlinkSync(at(a));
      return [event('REMOVE', a)];
    case 'rename':
      if (!exists(a) || exists(b) || !folderReady(b)) return undefined;
      fs.renameSync(at(a), at(b));
      return [event('RENAME', a), event('CREATE', b)];
  }
}

const stepArb = fc.record({ kind: fc.constantFrom('create', 'write', 'chmod', 'remove', 'rename', 'mkdir'), a: fc.nat(9), b: fc.nat(9) }) as fc.Arbitrary<Step>;

test('every operation reads back as its own ops, whatever came before it', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 10 }), async (steps) => {
      const root = fs.mkdtempSync(path.join(scratch, 'w-'));
      fs.writeFileSync(path.join(root, 'f0'), 'before the watch');
      const seen: string[] = [];
      const watch = new FolderWatch({ real: root, shown: '/w', recursive: true, ignore: [], hiddenRoots: [], onEvent: (e: FileEvent) => void seen.push(`${e.op} ${e.path} ${e.name}`) });
      await watch.start();
      try {
        for (const step of steps) {
          const from = seen.length;
          const expected = apply(root, step);
          if (!expected) continue;
          await eventually(`${step.kind}: ${expected.join(', ')}`, async () => (expected.every((e) => seen.includes(e, from)) ? true : undefined), 10_000);
          // Each step's events are its own ops (a write may come as several WRITEs).
          expect([...new Set(seen.slice(from))].sort()).toEqual([...expected].sort());
        }
      } finally {
        watch.close();
        fs.rmSync(root, { recursive: true, force: true });
      }
    }),
    { numRuns: 40 },
  );
});

test('ignore patterns and hidden folders hold events back; a folder made later is watched with what it already holds', async () => {
  const root = fs.mkdtempSync(path.join(scratch, 'w-'));
  fs.mkdirSync(path.join(root, 'secret'));
  const seen: string[] = [];
  const watch = new FolderWatch({
    real: root,
    shown: '/w',
    recursive: true,
    ignore: ['skip'],
    hiddenRoots: [path.join(root, 'secret')],
    onEvent: (e) => void seen.push(`${e.op} ${e.path} ${e.name}`),
  });
  await watch.start();
  try {
    fs.writeFileSync(path.join(root, 'skip.txt'), 'x');
    fs.writeFileSync(path.join(root, 'secret', 'a.txt'), 'x');
    // Made and filled before its watch can begin: its content is announced as created.
    fs.mkdirSync(path.join(root, 'late', 'inner'), { recursive: true });
    fs.writeFileSync(path.join(root, 'late', 'inner', 'b.txt'), 'x');
    await eventually('late/inner/b.txt', async () => (seen.includes('CREATE /w/late/inner b.txt') ? true : undefined), 10_000);
    fs.writeFileSync(path.join(root, 'done.txt'), 'x');
    await eventually('done.txt', async () => (seen.includes('CREATE /w done.txt') ? true : undefined), 10_000);
    expect(seen.filter((e) => e.includes('skip') || e.includes('secret'))).toEqual([]);
  } finally {
    watch.close();
  }
});
