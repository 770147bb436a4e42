import fsp from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { searchContent } from './content-search';
import type { ContentSearchResponse, FindResponse, FuzzySearchResponse } from './contract/search';
import { fuzzyFind, findEntries } from './file-search';
import { FolderWatch } from './file-watch';
import type { SandboxFiles } from './filesystem';
import { badRequest, sendJson } from './http';
import type { RouteContext, RouteHandlers } from './route-handler';
import {
  booleanOf,
  contextLinesOf,
  excludeDirsOf,
  findTypeOf,
  globsOf,
  ignoreOf,
  maxResultsOf,
  searchTextOf,
} from './search-options';

type SearchOperation = 'findFiles' | 'fuzzySearch' | 'contentSearch' | 'watchFiles';

/** A watch stream says it is alive this often, as the reference's does, so that no proxy takes it for idle. */
const WATCH_KEEPALIVE_MS = 30_000;
const KEEPALIVE_LINE = '[keepalive]\n';
const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' };
const WATCH_HEADERS = { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no', 'x-content-type-options': 'nosniff' };

export interface SearchRoutesOptions {
  /** The environment of the user's processes: its PATH tells whether the image has ripgrep. */
  processEnv: () => Record<string, string>;
}

/** The real path of the folder a route names; anything but a readable folder is a 400 naming it. */
async function searchableFolder(files: SandboxFiles, asked: string): Promise<string> {
  const real = await files.resolveReadable(asked).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') throw badRequest(`path '${asked}' is not a directory: it does not exist`);
    throw err;
  });
  if (!(await fsp.stat(real)).isDirectory()) throw badRequest(`path '${asked}' is not a directory`);
  return real;
}

/**
 * HEAD, served by these GET routes, asks whether the folder can be served: once it is known to be
 * one, the headers are answered and nothing is searched or watched (so no length: RFC 9110 lets a
 * HEAD leave out what only the body would tell). Whether it was answered.
 */
function answeredHead(req: IncomingMessage, res: ServerResponse, headers: Record<string, string>): boolean {
  if (req.method !== 'HEAD') return false;
  res.writeHead(200, headers);
  res.end();
  return true;
}

/** The folder to watch: `/**` at the end of the path asks for the folders below it too. */
function watchTarget(files: SandboxFiles, params: Record<string, string>): { asked: string; recursive: boolean } {
  const asked = files.parse(params.path);
  if (asked === '/**' || asked.endsWith('/**')) return { asked: asked.slice(0, -3) || '/', recursive: true };
  return { asked, recursive: false };
}

/** GET /watch/filesystem/{path}: one FileEvent JSON a line, and keepalive lines, until the caller leaves. */
async function streamChanges(files: SandboxFiles, req: IncomingMessage, res: ServerResponse, { params, query }: RouteContext): Promise<void> {
  const { asked, recursive } = watchTarget(files, params);
  const real = await searchableFolder(files, asked);
  if (answeredHead(req, res, WATCH_HEADERS)) return;
  const ignore = ignoreOf(query);
  const watch = new FolderWatch({
    real,
    shown: asked,
    recursive,
    ignore,
    hiddenRoots: files.policy.hidden,
    onEvent: (event) => res.write(`${JSON.stringify(event)}\n`),
  });
  // Throws before anything is sent when the folder cannot be watched: the caller gets its error.
  const inPlace = watch.start();
  const keepalive = setInterval(() => res.write(KEEPALIVE_LINE), WATCH_KEEPALIVE_MS);
  res.on('close', () => {
    clearInterval(keepalive);
    watch.close();
  });
  res.writeHead(200, WATCH_HEADERS);
  await inPlace;
  // Once every folder is watched, not only after the first interval: the caller learns that the watch is in place.
  res.write(KEEPALIVE_LINE);
}

/** find, fuzzy search, content search and watch below a folder of the sandbox. */
export function searchRoutes(files: SandboxFiles, options: SearchRoutesOptions) {
  /** What find and search leave out: the folders named, and (unless told otherwise) hidden names. */
  const walkOptions = (query: URLSearchParams) => ({
    excludeDirs: new Set(excludeDirsOf(query)),
    excludeHidden: booleanOf(query, 'excludeHidden', true),
    isHidden: (real: string) => files.policy.isHidden(real),
  });

  async function find(req: IncomingMessage, res: ServerResponse, { params, query }: RouteContext) {
    const root = await searchableFolder(files, files.parse(params.path));
    if (answeredHead(req, res, JSON_HEADERS)) return;
    const type = findTypeOf(query);
    const patterns = globsOf(query, 'patterns');
    const maxResults = maxResultsOf(query, 20);
    const matches = await findEntries(root, { ...walkOptions(query), type, patterns, maxResults });
    sendJson(res, 200, { matches, total: matches.length } satisfies FindResponse);
  }

  async function fuzzy(req: IncomingMessage, res: ServerResponse, { params, query }: RouteContext) {
    const asked = files.parse(params.path);
    const root = await searchableFolder(files, asked);
    if (answeredHead(req, res, JSON_HEADERS)) return;
    const patterns = globsOf(query, 'patterns');
    const maxResults = maxResultsOf(query, 20);
    // The reference SDK's fs.search never sends its query; the reference then matches the path itself.
    const text = query.get('query') || asked;
    const matches = await fuzzyFind(root, { ...walkOptions(query), text, patterns, maxResults });
    sendJson(res, 200, { matches, total: matches.length } satisfies FuzzySearchResponse);
  }

  async function content(req: IncomingMessage, res: ServerResponse, { params, query }: RouteContext) {
    const root = await searchableFolder(files, files.parse(params.path));
    if (answeredHead(req, res, JSON_HEADERS)) return;
    const text = searchTextOf(query);
    const contentQuery = {
      text,
      caseSensitive: booleanOf(query, 'caseSensitive', false),
      contextLines: contextLinesOf(query),
      maxResults: maxResultsOf(query, 100),
      filePattern: globsOf(query, 'filePattern')[0],
      excludeDirs: excludeDirsOf(query),
    };
    // A caller that leaves stops the search (ripgrep is killed).
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    const matches = await searchContent(options.processEnv(), { root, hiddenRoots: files.policy.hidden }, contentQuery, gone.signal);
    sendJson(res, 200, { query: text, matches, total: matches.length } satisfies ContentSearchResponse);
  }

  return {
    findFiles: find,
    fuzzySearch: fuzzy,
    contentSearch: content,
    watchFiles: (req, res, context) => streamChanges(files, req, res, context),
  } satisfies RouteHandlers<SearchOperation>;
}
