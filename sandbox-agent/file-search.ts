import path from 'node:path';
import type { FindMatch, FuzzySearchMatch } from './contract/search';
import { walk, type WalkOptions } from './file-walk';
import { rankFuzzy } from './fuzzy';
import { anyGlob } from './glob';

/**
 * /filesystem-find and /filesystem-search below a real folder. Paths answered are relative to
 * it; the folder itself is never one of them. A symbolic link, never followed, counts as a file.
 */

export interface FindQuery extends WalkOptions {
  type: 'file' | 'directory';
  /** Globs a file's name must match (folders are found whatever their names). */
  patterns: readonly string[];
  maxResults: number;
}

const typeOf = (kind: string): FindMatch['type'] => (kind === 'directory' ? 'directory' : 'file');

/** Entries of the type asked, in the walk's order, until there are enough. */
export async function findEntries(root: string, query: FindQuery): Promise<FindMatch[]> {
  const namesMatch = anyGlob(query.patterns);
  const matches: FindMatch[] = [];
  for await (const entry of walk(root, query)) {
    const type = typeOf(entry.kind);
    if (type !== query.type || (type === 'file' && !namesMatch(path.posix.basename(entry.relative)))) continue;
    matches.push({ path: entry.relative, type });
    if (matches.length >= query.maxResults) break;
  }
  return matches;
}

export interface FuzzyQuery extends WalkOptions {
  text: string;
  patterns: readonly string[];
  maxResults: number;
}

/** Files and folders whose relative path fuzzily matches the text, best first. */
export async function fuzzyFind(root: string, query: FuzzyQuery): Promise<FuzzySearchMatch[]> {
  const namesMatch = anyGlob(query.patterns);
  const candidates: FindMatch[] = [];
  for await (const entry of walk(root, query)) {
    const type = typeOf(entry.kind);
    if (type === 'file' && !namesMatch(path.posix.basename(entry.relative))) continue;
    candidates.push({ path: entry.relative, type });
  }
  return rankFuzzy(query.text, candidates, (candidate) => candidate.path)
    .slice(0, query.maxResults)
    .map(({ item, score }) => ({ path: item.path, score, type: item.type }));
}
