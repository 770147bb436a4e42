import { DEFAULT_EXCLUDED_DIRS } from './file-walk';
import { GlobError, nameGlob, splitPatterns } from './glob';
import { badRequest } from './http';

/**
 * The query parameters of find, search, content search and watch, as the reference SDK sends
 * them, read strictly: a value that does not parse is a 400 naming its parameter, never
 * quietly replaced by a default.
 */

/** Results at most: 0 asks for all (Infinity); above the cap is refused rather than cut. */
export const MAX_RESULTS_CAP = 1000;
export const MAX_CONTEXT_LINES = 50;

export function maxResultsOf(query: URLSearchParams, fallback: number): number {
  const raw = query.get('maxResults');
  if (raw === null || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) > MAX_RESULTS_CAP) {
    throw badRequest(`query parameter 'maxResults' must be an integer from 0 (all) to ${MAX_RESULTS_CAP}, got '${raw}'`);
  }
  return Number(raw) === 0 ? Infinity : Number(raw);
}

export function booleanOf(query: URLSearchParams, name: string, fallback: boolean): boolean {
  const raw = query.get(name);
  if (raw === null || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw badRequest(`query parameter '${name}' must be true or false, got '${raw}'`);
}

/** A comma-separated list; absent: the default; given empty: nothing. */
function listOf(query: URLSearchParams, name: string, fallback: readonly string[]): string[] {
  const raw = query.get(name);
  if (raw === null) return [...fallback];
  return raw.split(',').map((item) => item.trim()).filter((item) => item !== '');
}

/** Folder names (not paths): a name with a slash could never match one, so it is refused rather than ignored. */
export function excludeDirsOf(query: URLSearchParams): string[] {
  const names = listOf(query, 'excludeDirs', DEFAULT_EXCLUDED_DIRS);
  const path = names.find((name) => name.includes('/'));
  if (path !== undefined) throw badRequest(`query parameter 'excludeDirs' lists folder names, not paths: '${path}'`);
  return names.filter((name) => name !== '.' && name !== '..');
}

export const ignoreOf = (query: URLSearchParams) => listOf(query, 'ignore', []);

/** Globs, each checked now so that a malformed one is a 400 naming its parameter. */
export function globsOf(query: URLSearchParams, name: string): string[] {
  const raw = query.get(name);
  const globs = raw === null ? [] : name === 'patterns' ? splitPatterns(raw) : [raw];
  for (const glob of globs) {
    try {
      nameGlob(glob);
    } catch (err) {
      if (err instanceof GlobError) throw badRequest(`query parameter '${name}': the glob '${glob}' ${err.message}`);
      throw err;
    }
  }
  return globs;
}

export function findTypeOf(query: URLSearchParams): 'file' | 'directory' {
  const raw = query.get('type');
  if (raw === null || raw === '' || raw === 'file') return 'file';
  if (raw === 'directory') return 'directory';
  throw badRequest(`query parameter 'type' must be file or directory, got '${raw}'`);
}

export function contextLinesOf(query: URLSearchParams): number {
  const raw = query.get('contextLines');
  if (raw === null || raw === '') return 0;
  if (!/^\d+$/.test(raw) || Number(raw) > MAX_CONTEXT_LINES) throw badRequest(`query parameter 'contextLines' must be an integer from 0 to ${MAX_CONTEXT_LINES}, got '${raw}'`);
  return Number(raw);
}

/** The text a content search looks for: required, one line. */
export function searchTextOf(query: URLSearchParams): string {
  const text = query.get('query');
  if (text === null || text === '') throw badRequest("query parameter 'query' is required: the text to search for");
  if (/[\r\n]/.test(text)) throw badRequest("query parameter 'query' must be one line (matches are lines)");
  return text;
}
