import fc from 'fast-check';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findRipgrep, searchWithNode, searchWithRipgrep, type ContentQuery, type SearchScope } from '../../../sandbox-agent/content-search';
import { DEFAULT_EXCLUDED_DIRS } from '../../../sandbox-agent/file-walk';

// The content search answers alike with ripgrep and without it (the Node search the agent uses
// where the image has no rg): generated trees and queries, both engines, the same answer.
jest.setTimeout(120_000);

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
let rg: string;
let scratch: string;

beforeAll(async () => {
  const found = findRipgrep(env);
  if (!found) throw new Error('ripgrep (rg) is not installed: scripts/install-deps.sh installs it');
  rg = found;
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-grep-'));
});

afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

const base: ContentQuery = { text: 'foo', caseSensitive: false, contextLines: 0, maxResults: Infinity, excludeDirs: DEFAULT_EXCLUDED_DIRS };

function makeTree(files: { dir: string; name: string; lines: string[]; newlineAtEnd: boolean }[]): string {
  const root = fs.mkdtempSync(path.join(scratch, 'tree-'));
  for (const file of files) {
    try {
      fs.mkdirSync(path.join(root, file.dir), { recursive: true });
      fs.writeFileSync(path.join(root, file.dir, file.name), file.lines.join('\n') + (file.newlineAtEnd ? '\n' : ''));
    } catch (err) {
      // A file and a folder of the same name: the tree keeps whichever came first.
      if (!['ENOTDIR', 'EISDIR', 'EEXIST'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
    }
  }
  return root;
}

async function both(scope: SearchScope, query: ContentQuery) {
  const withRipgrep = await searchWithRipgrep(rg, env, scope, query);
  const withNode = await searchWithNode(scope, query);
  return { withRipgrep, withNode };
}

test('a literal text found in a small tree: path, line, column (bytes), text and context', async () => {
  const root = makeTree([
    { dir: 'src', name: 'a.txt', lines: ['one', 'é foo here', 'three', 'FOO four'], newlineAtEnd: true },
    { dir: 'node_modules/x', name: 'b.txt', lines: ['foo'], newlineAtEnd: false },
    { dir: '.cache', name: 'c.txt', lines: ['foo'], newlineAtEnd: false },
  ]);
  fs.writeFileSync(path.join(root, 'binary.bin'), Buffer.from('foo\0foo'));
  fs.symlinkSync(path.join(root, 'src'), path.join(root, 'link'));
  const query = { ...base, contextLines: 1 };
  const expected = [
    { path: '.cache/c.txt', line: 1, column: 1, text: 'foo', context: 'foo' },
    { path: 'src/a.txt', line: 2, column: 4, text: 'é foo here', context: 'one\né foo here\nthree' },
    { path: 'src/a.txt', line: 4, column: 1, text: 'FOO four', context: 'three\nFOO four' },
  ];
  const { withRipgrep, withNode } = await both({ root, hiddenRoots: [] }, query);
  expect(withRipgrep).toEqual(expected);
  expect(withNode).toEqual(expected);
});

const line = fc.constantFrom('foo', 'Foo bar', 'xFOOx foo', '', '  bar  ', 'é foo', 'nothing', 'ba r');
const fileArb = fc.record({
  dir: fc.constantFrom('', 'a', 'a/b', '.hid', 'node_modules', 'b c', 'x/node_modules', 'a.d'),
  name: fc.constantFrom('f.txt', 'g.md', '.dot', 'h', 'é.txt', 'B.TXT', 'a'),
  lines: fc.array(line, { maxLength: 8 }),
  newlineAtEnd: fc.boolean(),
});
const queryArb = fc.record({
  text: fc.constantFrom('foo', 'FOO', 'bar', 'o b', 'é', ' '),
  caseSensitive: fc.boolean(),
  contextLines: fc.integer({ min: 0, max: 2 }),
  maxResults: fc.constantFrom(1, 3, Infinity),
  filePattern: fc.constantFrom(undefined, '*.txt', '*.{md,txt}', '[fg]*', '.*'),
  excludeDirs: fc.constantFrom(DEFAULT_EXCLUDED_DIRS, [], ['a', 'b c']),
});

test('ripgrep and the Node search give the same answer, whatever the tree and the query', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(fileArb, { maxLength: 12 }), queryArb, fc.boolean(), async (files, query, hideA) => {
      const root = makeTree(files);
      const scope = { root, hiddenRoots: hideA ? [path.join(root, 'a')] : [] };
      const { withRipgrep, withNode } = await both(scope, query);
      expect(withRipgrep).toEqual(withNode);
      fs.rmSync(root, { recursive: true, force: true });
    }),
    { numRuns: 150 },
  );
});
