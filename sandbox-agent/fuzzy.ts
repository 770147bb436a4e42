/**
 * Fuzzy matching of a query against a relative path, for /filesystem-search: the query's
 * characters must appear in order (case ignored); the score rewards what a person typing a
 * name means: characters in a row, characters starting a word or a path segment, and a match
 * that starts early in the name rather than spread thin. Higher is better; no match: undefined.
 */

const MATCH = 16;
const GAP_START = -3;
const GAP_EXTEND = -1;
/** At the start or after a path separator: the query most likely names a segment. */
const BONUS_SEGMENT = 9;
/** After `_`, `-`, `.` or a space. */
const BONUS_WORD = 8;
/** An upper-case letter after a lower-case one, or a digit after a letter. */
const BONUS_CAMEL = 7;
/** Characters in a row keep at least this bonus, so a contiguous run beats a scattered one. */
const BONUS_RUN = 4;

function boundaryBonus(text: string, at: number): number {
  const before = text[at - 1];
  const char = text[at];
  if (at === 0 || before === '/') return BONUS_SEGMENT;
  if ('_-. '.includes(before)) return BONUS_WORD;
  if (/[a-z]/.test(before) && /[A-Z]/.test(char)) return BONUS_CAMEL;
  if (/[A-Za-z]/.test(before) && /[0-9]/.test(char)) return BONUS_CAMEL;
  return 0;
}

/**
 * The narrowest window holding the query in order: forwards to the first place the whole query
 * is found, then backwards from there, which drops a needlessly early start.
 */
function window(query: string, text: string): { start: number; end: number } | undefined {
  let q = 0;
  let end = -1;
  for (let i = 0; i < text.length && q < query.length; i++) {
    if (text[i] === query[q]) q++;
    if (q === query.length) end = i;
  }
  if (end < 0) return undefined;
  let start = end;
  for (let i = end, back = query.length - 1; i >= 0 && back >= 0; i--) {
    if (text[i] === query[back]) {
      back--;
      start = i;
    }
  }
  return { start, end };
}

/** Scores the characters of `window` as matched greedily from its start. */
function scoreWindow(query: string, lower: string, original: string, start: number, end: number): number {
  let score = 0;
  let q = 0;
  let runBonus = 0;
  let inGap = false;
  for (let i = start; i <= end && q < query.length; i++) {
    if (lower[i] !== query[q]) {
      score += inGap ? GAP_EXTEND : GAP_START;
      inGap = true;
      runBonus = 0;
      continue;
    }
    const bonus = boundaryBonus(original, i);
    runBonus = inGap || q === 0 ? bonus : Math.max(runBonus, bonus, BONUS_RUN);
    // The query's first character counts double: where a match starts says most about it.
    score += MATCH + (q === 0 ? runBonus * 2 : runBonus);
    inGap = false;
    q++;
  }
  return score;
}

export function fuzzyScore(query: string, text: string): number | undefined {
  if (query === '') return undefined;
  const lowerQuery = query.toLowerCase();
  const lower = text.toLowerCase();
  // toLowerCase may change a string's length (rare letters): then indices would not line up.
  if (lower.length !== text.length) return undefined;
  const found = window(lowerQuery, lower);
  if (!found) return undefined;
  return scoreWindow(lowerQuery, lower, text, found.start, found.end);
}

export interface Ranked<T> {
  item: T;
  score: number;
}

/** Items whose key matches the query, best first; ties: the shorter key, then the key's order. */
export function rankFuzzy<T>(query: string, items: Iterable<T>, key: (item: T) => string): Ranked<T>[] {
  const ranked: Ranked<T>[] = [];
  for (const item of items) {
    const score = fuzzyScore(query, key(item));
    if (score !== undefined) ranked.push({ item, score });
  }
  return ranked.sort((a, b) => b.score - a.score || key(a.item).length - key(b.item).length || (key(a.item) < key(b.item) ? -1 : key(a.item) > key(b.item) ? 1 : 0));
}
