/**
 * Globs on one name (never a path): `*` any run of characters, `?` one, `[a-z]` / `[!a-z]` /
 * `[^a-z]` a class, `{a,b}` alternatives, `\` quotes the next character. It is the reference's
 * filepath.Match with `{a,b}` added, and the same dialect ripgrep's --glob reads for a pattern
 * without a slash, so the content search answers alike with ripgrep and without it.
 */

export class GlobError extends Error {}

/** Characters a regular expression reads as syntax (with the u flag, only these may be quoted). */
const SPECIAL = /[.*+?^${}()|[\]\\/]/;

/** The regular expression source of a pattern from `at`, up to the end or (inside braces) to `stops`. */
function compile(pattern: string, at: number, stops: string): { source: string; next: number } {
  let source = '';
  let i = at;
  while (i < pattern.length && !stops.includes(pattern[i])) {
    const char = pattern[i];
    if (char === '*') source += '[^/]*';
    else if (char === '?') source += '[^/]';
    else if (char === '[') {
      const close = classEnd(pattern, i);
      source += classSource(pattern.slice(i + 1, close));
      i = close;
    } else if (char === '{') {
      const { source: group, next } = alternatives(pattern, i + 1);
      source += group;
      i = next;
    } else if (char === '\\') {
      if (i + 1 >= pattern.length) throw new GlobError('ends with a lone \\');
      source += escapeChar(pattern[++i]);
    } else if (char === '}') throw new GlobError("has an unmatched '}'");
    else source += escapeChar(char);
    i++;
  }
  return { source, next: i };
}

function alternatives(pattern: string, at: number): { source: string; next: number } {
  const options: string[] = [];
  let i = at;
  for (;;) {
    const { source, next } = compile(pattern, i, ',}');
    options.push(source);
    if (next >= pattern.length) throw new GlobError("has an unclosed '{'");
    if (pattern[next] === '}') return { source: `(?:${options.join('|')})`, next };
    i = next + 1;
  }
}

/** Index of the `]` closing the class opened at `open` (a `]` first in the class is literal). */
function classEnd(pattern: string, open: number): number {
  let i = open + 1;
  if (pattern[i] === '!' || pattern[i] === '^') i++;
  if (pattern[i] === ']') i++;
  while (i < pattern.length && pattern[i] !== ']') i += pattern[i] === '\\' ? 2 : 1;
  if (i >= pattern.length) throw new GlobError("has an unclosed '['");
  return i;
}

function classSource(body: string): string {
  const negated = body[0] === '!' || body[0] === '^';
  const first = negated ? 1 : 0;
  let members = '';
  for (let i = first; i < body.length; i++) {
    const quoted = body[i] === '\\';
    const char = quoted ? body[++i] : body[i];
    // A '-' between two members is a range; first, last or quoted it is itself.
    const range = char === '-' && !quoted && i > first && i < body.length - 1;
    members += range ? '-' : /[\]\\^-]/.test(char) ? `\\${char}` : char;
  }
  if (members === '') throw new GlobError('has an empty class []');
  return negated ? `[^/${members}]` : `[${members}]`;
}

const escapeChar = (char: string) => (SPECIAL.test(char) ? `\\${char}` : char);

/** A test of names against one glob; throws GlobError for a malformed one or one with a slash. */
export function nameGlob(pattern: string): (name: string) => boolean {
  if (pattern.includes('/')) throw new GlobError('matches a name, so it cannot hold a /');
  const { source } = compile(pattern, 0, '');
  let regex: RegExp;
  try {
    regex = new RegExp(`^${source}$`, 'su');
  } catch {
    throw new GlobError('has a malformed class (a range such as z-a?)');
  }
  return (name) => regex.test(name);
}

/** Whether a name matches any of the globs (none given: every name does). */
export function anyGlob(patterns: readonly string[]): (name: string) => boolean {
  const tests = patterns.map(nameGlob);
  return (name) => tests.length === 0 || tests.some((test) => test(name));
}

/** A comma-separated list of globs, as the SDK joins them: a comma inside {a,b} stays in its glob. */
export function splitPatterns(list: string): string[] {
  const patterns: string[] = [];
  let depth = 0;
  let current = '';
  for (let i = 0; i < list.length; i++) {
    const char = list[i];
    if (char === '\\' && i + 1 < list.length) {
      current += char + list[++i];
      continue;
    }
    if (char === '{') depth++;
    if (char === '}') depth = Math.max(0, depth - 1);
    if (char === ',' && depth === 0) {
      patterns.push(current);
      current = '';
    } else current += char;
  }
  patterns.push(current);
  return patterns.map((p) => p.trim()).filter((p) => p !== '');
}
