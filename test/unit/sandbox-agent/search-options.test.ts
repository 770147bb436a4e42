import { DEFAULT_EXCLUDED_DIRS } from '../../../sandbox-agent/file-walk';
import { HttpError } from '../../../sandbox-agent/http';
import {
  booleanOf,
  contextLinesOf,
  excludeDirsOf,
  findTypeOf,
  globsOf,
  ignoreOf,
  maxResultsOf,
  searchTextOf,
} from '../../../sandbox-agent/search-options';

const q = (text: string) => new URLSearchParams(text);

/** The 400's message, naming the parameter. */
function refusal(read: () => unknown): string {
  try {
    read();
  } catch (err) {
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).status).toBe(400);
    return (err as HttpError).message;
  }
  throw new Error('accepted');
}

test('maxResults: the default, 0 for all, up to 1000; anything else is a 400 naming it', () => {
  expect(maxResultsOf(q(''), 20)).toBe(20);
  expect(maxResultsOf(q('maxResults=0'), 20)).toBe(Infinity);
  expect(maxResultsOf(q('maxResults=1000'), 20)).toBe(1000);
  for (const bad of ['-1', '1001', 'ten', '1.5']) expect(refusal(() => maxResultsOf(q(`maxResults=${bad}`), 20))).toMatch(/'maxResults'.*0 \(all\) to 1000/);
});

test('booleans: true/false/1/0, the default when absent; anything else is a 400 naming it', () => {
  expect(booleanOf(q(''), 'excludeHidden', true)).toBe(true);
  expect(booleanOf(q('excludeHidden=false'), 'excludeHidden', true)).toBe(false);
  expect(booleanOf(q('caseSensitive=1'), 'caseSensitive', false)).toBe(true);
  expect(refusal(() => booleanOf(q('caseSensitive=yes'), 'caseSensitive', false))).toMatch(/'caseSensitive' must be true or false/);
});

test('excludeDirs: the defaults when absent, none when empty, names only', () => {
  expect(excludeDirsOf(q(''))).toEqual([...DEFAULT_EXCLUDED_DIRS]);
  expect(excludeDirsOf(q('excludeDirs='))).toEqual([]);
  expect(excludeDirsOf(q('excludeDirs=lib, .cache,,..'))).toEqual(['lib', '.cache']);
  expect(refusal(() => excludeDirsOf(q('excludeDirs=src/lib')))).toMatch(/'excludeDirs'.*'src\/lib'/);
  expect(ignoreOf(q('ignore=a,b'))).toEqual(['a', 'b']);
});

test('globs are checked as they come: a malformed one is a 400 naming its parameter and itself', () => {
  expect(globsOf(q('patterns=*.go,*.{ts,js}'), 'patterns')).toEqual(['*.go', '*.{ts,js}']);
  expect(globsOf(q('filePattern=*.{ts,js}'), 'filePattern')).toEqual(['*.{ts,js}']);
  expect(refusal(() => globsOf(q('patterns=*.go,[ab'), 'patterns'))).toMatch(/'patterns'.*'\[ab'/);
  expect(refusal(() => globsOf(q('filePattern=src/*.ts'), 'filePattern'))).toMatch(/'filePattern'.*'src\/\*\.ts'/);
});

test('type, contextLines and the content search\'s text', () => {
  expect(findTypeOf(q(''))).toBe('file');
  expect(findTypeOf(q('type=directory'))).toBe('directory');
  expect(refusal(() => findTypeOf(q('type=link')))).toMatch(/'type' must be file or directory/);
  expect(contextLinesOf(q('contextLines=3'))).toBe(3);
  expect(refusal(() => contextLinesOf(q('contextLines=51')))).toMatch(/'contextLines'/);
  expect(searchTextOf(q('query=a%20b'))).toBe('a b');
  expect(refusal(() => searchTextOf(q('')))).toMatch(/'query' is required/);
  expect(refusal(() => searchTextOf(q('query=a%0Ab')))).toMatch(/'query' must be one line/);
});
