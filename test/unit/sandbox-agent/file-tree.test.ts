import { treeTargets } from '../../../sandbox-agent/file-tree';
import { HttpError } from '../../../sandbox-agent/http';

test('each key of the tree lands below the root; a leading slash is still relative', () => {
  expect(treeTargets('/home/user/app', { 'a.txt': 'A', 'src/b.ts': 'B', '/c/d.md': 'D', './e': 'E' })).toEqual([
    { target: '/home/user/app/a.txt', content: 'A' },
    { target: '/home/user/app/src/b.ts', content: 'B' },
    { target: '/home/user/app/c/d.md', content: 'D' },
    { target: '/home/user/app/e', content: 'E' },
  ]);
  expect(treeTargets('/', { x: '' })).toEqual([{ target: '/x', content: '' }]);
});

test.each([
  [{ '../escape': 'x' }, /'files\["\.\.\/escape"\]': the path must not contain '\.\.'/],
  [{ 'a/../../b': 'x' }, /files\["a\/\.\.\/\.\.\/b"\]/],
  [{ '': 'x' }, /'files\[""\]': the path names no file/],
  [{ '/': 'x' }, /the path names no file/],
  [{ 'a\0b': 'x' }, /must not contain NUL/],
  [{ 'n.txt': 5 }, /'files\["n\.txt"\]' must be a string/],
])('a key that leaves the root or names nothing, or content that is not text, is refused by name: %j', (files, message) => {
  let caught: unknown;
  try {
    treeTargets('/home/user', files);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(HttpError);
  expect((caught as HttpError).status).toBe(400);
  expect((caught as HttpError).message).toMatch(message);
});
