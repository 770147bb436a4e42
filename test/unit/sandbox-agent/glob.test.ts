import fc from 'fast-check';
import { GlobError, anyGlob, nameGlob, splitPatterns } from '../../../sandbox-agent/glob';

describe('nameGlob', () => {
  test.each([
    ['*.go', 'main.go', true],
    ['*.go', 'main.go.txt', false],
    ['*.go', '.go', true],
    ['?.txt', 'a.txt', true],
    ['?.txt', 'ab.txt', false],
    ['[abc].md', 'b.md', true],
    ['[a-c].md', 'd.md', false],
    ['[!a-c].md', 'd.md', true],
    ['[^a-c].md', 'a.md', false],
    ['[]].md', '].md', true],
    ['[a-].md', '-.md', true],
    ['*.{ts,js}', 'index.js', true],
    ['*.{ts,js}', 'index.tsx', false],
    ['{Make,Rake}file', 'Rakefile', true],
    ['\\*.txt', '*.txt', true],
    ['\\*.txt', 'a.txt', false],
    ['a+b(c).txt', 'a+b(c).txt', true],
    ['a.b', 'aXb', false],
    ['*', '', true],
    ['Makefile', 'makefile', false],
    ['x]', 'x]', true],
  ])('%s against %s: %s', (pattern, name, expected) => {
    expect(nameGlob(pattern)(name)).toBe(expected);
  });

  test.each([['[abc'], ['*.{ts,js'], ['a}'], ['trailing\\'], ['dir/*.go'], ['[z-a]'], ['[]']])('%s is refused', (pattern) => {
    expect(() => nameGlob(pattern)).toThrow(GlobError);
  });

  test('a name with every special character quoted matches itself and nothing else', () => {
    const quote = (name: string) => name.replace(/[*?[\]{}\\!,]/g, '\\$&');
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !s.includes('/')), fc.string({ maxLength: 12 }), (name, other) => {
        const test = nameGlob(quote(name));
        expect(test(name)).toBe(true);
        expect(test(other)).toBe(other === name);
      }),
      { numRuns: 2_000 },
    );
  });

  test('* matches any name, whatever its characters', () => {
    fc.assert(fc.property(fc.string({ maxLength: 20 }).filter((s) => !s.includes('/')), (name) => expect(nameGlob('*')(name)).toBe(true)));
  });
});

describe('anyGlob and splitPatterns', () => {
  test('no patterns: every name; several: any of them', () => {
    expect(anyGlob([])('x')).toBe(true);
    const test = anyGlob(['*.ts', '*.md']);
    expect(['a.ts', 'b.md', 'c.js'].map(test)).toEqual([true, true, false]);
  });

  test('the SDK\'s comma-joined list splits outside braces only, trimmed, empty items dropped', () => {
    expect(splitPatterns('*.go, *.{ts,js},,Makefile')).toEqual(['*.go', '*.{ts,js}', 'Makefile']);
    expect(splitPatterns('a\\,b,c')).toEqual(['a\\,b', 'c']);
    expect(splitPatterns('')).toEqual([]);
  });
});
