import fc from 'fast-check';
import { fuzzyScore, rankFuzzy } from '../../../sandbox-agent/fuzzy';

describe('fuzzyScore', () => {
  test('the query must appear in order, case ignored', () => {
    expect(fuzzyScore('abc', 'xaxbxc')).toBeDefined();
    expect(fuzzyScore('ABC', 'abc')).toBeDefined();
    expect(fuzzyScore('abc', 'acb')).toBeUndefined();
    expect(fuzzyScore('', 'abc')).toBeUndefined();
    expect(fuzzyScore('abcd', 'abc')).toBeUndefined();
  });

  test('characters in a row beat the same characters spread out', () => {
    expect(fuzzyScore('main', 'src/main.ts')!).toBeGreaterThan(fuzzyScore('main', 'src/m-a-i-n.ts')!);
  });

  test('a match starting a path segment or a word beats one inside a word', () => {
    expect(fuzzyScore('conf', 'src/config.ts')!).toBeGreaterThan(fuzzyScore('conf', 'src/deconfig.ts')!);
    expect(fuzzyScore('util', 'my_util.ts')!).toBeGreaterThan(fuzzyScore('util', 'myutil.ts')!);
    expect(fuzzyScore('fb', 'FooBar.ts')!).toBeGreaterThan(fuzzyScore('fb', 'foobar.ts')!);
  });

  test('any text holding the query as a substring matches it', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 10 }), fc.string({ minLength: 1, maxLength: 6 }), fc.string({ maxLength: 10 }), (before, query, after) => {
        // Letters whose lower case is longer (İ) are passed over, as fuzzyScore says.
        fc.pre(query.toLowerCase().length === query.length && (before + query + after).toLowerCase().length === (before + query + after).length);
        expect(fuzzyScore(query, before + query + after)).toBeDefined();
      }),
      { numRuns: 2_000 },
    );
  });

  test('the query itself, as a whole path, scores at least as well as the query inside a longer path', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z]{1,8}$/), fc.stringMatching(/^[a-z/._-]{0,10}$/), (query, around) => {
        expect(fuzzyScore(query, query)!).toBeGreaterThanOrEqual(fuzzyScore(query, `${around}${query}${around}`)!);
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('rankFuzzy', () => {
  test('best first; ties go to the shorter path, then to the path order', () => {
    const paths = ['docs/readme.md', 'src/read.ts', 'src/r/e/a/d.ts', 'lib/read.ts', 'notes.txt'];
    expect(rankFuzzy('read', paths, (p) => p).map((r) => r.item)).toEqual(['lib/read.ts', 'src/read.ts', 'docs/readme.md', 'src/r/e/a/d.ts']);
  });
});
