import { spawn } from 'node:child_process';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { ContentSearchMatch } from './contract/search';
import { findOnPath } from './executables';
import { walk } from './file-walk';
import { within } from './fs-paths';
import { nameGlob } from './glob';
import { OOM_PREFER_USER } from './process-manager';

/**
 * The content search of /filesystem-content-search: lines holding a literal text, in the files
 * below a folder. ripgrep does it where the sandbox's image has it (found on the PATH the user's
 * processes get, started as they are); elsewhere a search in Node gives the same answer: the
 * same files (nothing is skipped for .gitignore, hidden names are searched, symbolic links are
 * not followed, files holding a NUL byte are binary and passed over), in the same order
 * (ripgrep's --sort path), with the same line, column and context.
 */

export interface ContentQuery {
  text: string;
  caseSensitive: boolean;
  /** Lines of context each side of a match; 0: no context. */
  contextLines: number;
  /** Matches at most; Infinity: all. */
  maxResults: number;
  /** A glob a file's name must match. */
  filePattern?: string;
  /** Folder names not entered. */
  excludeDirs: readonly string[];
}

/** Where to search: a real folder, and the real folders the API never shows. */
export interface SearchScope {
  root: string;
  hiddenRoots: readonly string[];
}

/** Matches found in one file, with the lines a context is read from. */
type LineAt = (line: number) => string | undefined;

function toMatch(relative: string, line: number, column: number, text: string, lineAt: LineAt, contextLines: number): ContentSearchMatch {
  const match: ContentSearchMatch = { path: relative, line, column, text };
  if (contextLines > 0) {
    const around: string[] = [];
    for (let n = line - contextLines; n <= line + contextLines; n++) {
      const aroundLine = lineAt(n);
      if (aroundLine !== undefined) around.push(aroundLine);
    }
    match.context = around.join('\n');
  }
  return match;
}

const isHiddenIn = (scope: SearchScope) => (real: string) => scope.hiddenRoots.some((root) => within(real, root));

// ---------------------------------------------------------------------------------------------
// Without ripgrep

/** The first match of the text in a line, as a JavaScript index, or -1. */
function lineMatcher(query: ContentQuery): (line: string) => number {
  if (query.caseSensitive) return (line) => line.indexOf(query.text);
  // 'iu': Unicode simple case folding, as ripgrep's --ignore-case.
  const regex = new RegExp(query.text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'), 'iu');
  return (line) => regex.exec(line)?.index ?? -1;
}

function searchText(relative: string, content: Buffer, query: ContentQuery, find: (line: string) => number): ContentSearchMatch[] {
  const whole = content.toString('utf8');
  // The text holds no newline: a file without it anywhere has no matching line (most files; no split needed).
  if (find(whole) < 0) return [];
  const lines = whole.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const lineAt: LineAt = (n) => lines[n - 1];
  const matches: ContentSearchMatch[] = [];
  lines.forEach((line, i) => {
    const at = find(line);
    // Columns count bytes, as ripgrep (and the reference) count them.
    if (at >= 0) matches.push(toMatch(relative, i + 1, Buffer.byteLength(line.slice(0, at)) + 1, line, lineAt, query.contextLines));
  });
  return matches;
}

/** Files read this many ahead of the one being searched: the disk works while the CPU does. */
const READ_AHEAD = 16;

export async function searchWithNode(scope: SearchScope, query: ContentQuery, signal?: AbortSignal): Promise<ContentSearchMatch[]> {
  const nameMatches = query.filePattern ? nameGlob(query.filePattern) : () => true;
  const find = lineMatcher(query);
  const reads: { relative: string; content: Promise<Buffer | undefined> }[] = [];
  const matches: ContentSearchMatch[] = [];
  const drain = async (keep: number) => {
    while (reads.length > keep && matches.length < query.maxResults) {
      const { relative, content } = reads.shift()!;
      const bytes = await content;
      if (bytes && !bytes.includes(0)) matches.push(...searchText(relative, bytes, query, find));
    }
  };
  const options = { excludeDirs: new Set(query.excludeDirs), excludeHidden: false, isHidden: isHiddenIn(scope) };
  for await (const entry of walk(scope.root, options)) {
    if (signal?.aborted || matches.length >= query.maxResults) break;
    if (entry.kind !== 'file' || !nameMatches(path.posix.basename(entry.relative))) continue;
    reads.push({ relative: entry.relative, content: fsp.readFile(entry.real).catch(() => undefined) });
    await drain(READ_AHEAD);
  }
  await drain(0);
  return matches.slice(0, query.maxResults);
}

// ---------------------------------------------------------------------------------------------
// With ripgrep

/** ripgrep on the PATH the sandbox's processes get, if the image has it. */
export function findRipgrep(env: Record<string, string>): string | undefined {
  return findOnPath('rg', env.PATH ?? '');
}

/** A name as a literal glob: ripgrep's globs quote with a backslash. */
const literalGlob = (name: string) => name.replace(/[*?[\]{}\\!,]/g, '\\$&');

export function ripgrepArguments(scope: SearchScope, query: ContentQuery): string[] {
  const args = ['--json', '--no-config', '--no-ignore', '--hidden', '--no-messages', '--sort', 'path', '--fixed-strings'];
  args.push(query.caseSensitive ? '--case-sensitive' : '--ignore-case');
  if (query.contextLines > 0) args.push('--context', String(query.contextLines));
  // A leading '!' would make it an exclusion for ripgrep; for the name glob it is a character.
  if (query.filePattern) args.push('--glob', query.filePattern.replace(/^!/, '\\!'));
  for (const dir of query.excludeDirs) args.push('--glob', `!${literalGlob(dir)}/`);
  // '/x' is anchored at the folder searched.
  for (const hidden of scope.hiddenRoots) {
    if (hidden !== scope.root && within(hidden, scope.root)) args.push('--glob', `!/${literalGlob(path.posix.relative(scope.root, hidden))}`);
  }
  args.push('--regexp', query.text, '--', '.');
  return args;
}

/** ripgrep's JSON text: `{text}` when it is UTF-8, else `{bytes}` in base64. */
type RgText = { text?: string; bytes?: string };
const textOf = (value: RgText) => value.text ?? Buffer.from(value.bytes ?? '', 'base64').toString('utf8');

interface RgMessage {
  type: 'begin' | 'match' | 'context' | 'end' | 'summary';
  data: { path?: RgText; lines?: RgText; line_number?: number; submatches?: { start: number }[] };
}

/** Collects ripgrep's messages into matches, a file at a time (its context lines come around its matches). */
class RipgrepReader {
  readonly matches: ContentSearchMatch[] = [];
  private relative = '';
  private lines = new Map<number, string>();
  private pending: { line: number; column: number }[] = [];

  constructor(private readonly query: ContentQuery) {}

  read(message: RgMessage): void {
    const { data } = message;
    if (message.type === 'begin') {
      this.relative = textOf(data.path!).replace(/^\.\//, '');
      this.lines = new Map();
      this.pending = [];
    } else if (message.type === 'match' || message.type === 'context') {
      this.lines.set(data.line_number!, textOf(data.lines!).replace(/\n$/, ''));
      if (message.type === 'match') this.pending.push({ line: data.line_number!, column: (data.submatches?.[0]?.start ?? 0) + 1 });
    } else if (message.type === 'end') {
      for (const { line, column } of this.pending) {
        this.matches.push(toMatch(this.relative, line, column, this.lines.get(line)!, (n) => this.lines.get(n), this.query.contextLines));
      }
    }
  }

  get full(): boolean {
    return this.matches.length >= this.query.maxResults;
  }
}

/** undefined: ripgrep could not run (the caller searches without it). */
export async function searchWithRipgrep(rg: string, env: Record<string, string>, scope: SearchScope, query: ContentQuery, signal?: AbortSignal): Promise<ContentSearchMatch[] | undefined> {
  // Started as the user's processes are (the OOM killer prefers it to the API), without a shell reading the arguments.
  const child = spawn('/bin/sh', ['-c', `${OOM_PREFER_USER}exec "$0" "$@"`, rg, ...ripgrepArguments(scope, query)], {
    cwd: scope.root,
    env,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)).on('error', () => resolve(null)));
  const stop = () => child.kill('SIGKILL');
  signal?.addEventListener('abort', stop, { once: true });
  const reader = new RipgrepReader(query);
  try {
    for await (const line of createInterface({ input: child.stdout! })) {
      reader.read(JSON.parse(line) as RgMessage);
      if (reader.full) break;
    }
  } finally {
    signal?.removeEventListener('abort', stop);
    if (child.exitCode === null) stop();
  }
  const code = await exited;
  if (signal?.aborted) return [];
  // 0: found, 1: nothing found, 2: found with some files unreadable; 126/127 (or none): it did not run.
  if (!reader.full && (code === null || code > 2)) return undefined;
  return reader.matches.slice(0, query.maxResults);
}

/** The search, with ripgrep where the image has it. */
export async function searchContent(env: Record<string, string>, scope: SearchScope, query: ContentQuery, signal?: AbortSignal): Promise<ContentSearchMatch[]> {
  const rg = findRipgrep(env);
  const found = rg ? await searchWithRipgrep(rg, env, scope, query, signal) : undefined;
  return found ?? searchWithNode(scope, query, signal);
}
