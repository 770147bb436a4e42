import { schemaOf } from './schema';

/**
 * Finding files and watching them: `/filesystem-find`, `/filesystem-search` (fuzzy names),
 * `/filesystem-content-search` and `/watch/filesystem`, with the reference SDK's field names.
 */

/** One path found; `path` is relative to the folder searched. */
export interface FindMatch {
  path: string;
  type: 'file' | 'directory';
}

export interface FindResponse {
  matches: FindMatch[];
  total: number;
}

/** One fuzzy match of a name; the higher the score, the better the match. */
export interface FuzzySearchMatch {
  path: string;
  score: number;
  type: 'file' | 'directory';
}

export interface FuzzySearchResponse {
  matches: FuzzySearchMatch[];
  total: number;
}

/** A line holding the text searched for: 1-based line and column (in bytes, as the reference counts them). */
export interface ContentSearchMatch {
  path: string;
  line: number;
  column: number;
  text: string;
  /** With contextLines: the lines around the match and the match's own, joined by newlines. */
  context?: string;
}

export interface ContentSearchResponse {
  query: string;
  matches: ContentSearchMatch[];
  total: number;
}

export type FileEventOp = 'CREATE' | 'WRITE' | 'REMOVE' | 'RENAME' | 'CHMOD';

/** One line of a watch stream: what happened to `name` in the folder `path`. */
export interface FileEvent {
  op: FileEventOp;
  name: string;
  path: string;
  error: string | null;
}

const relativePath = { type: 'string' as const, description: 'Relative to the folder searched.' };
const entryType = { type: 'string' as const, enum: ['file', 'directory'] as const };

export const findMatchSchema = schemaOf<FindMatch>({ type: 'object', properties: { path: relativePath, type: entryType } });

export const findResponseSchema = schemaOf<FindResponse>({
  type: 'object',
  properties: { matches: { type: 'array', items: { $ref: '#/components/schemas/FindMatch' } }, total: { type: 'integer' } },
});

export const fuzzySearchMatchSchema = schemaOf<FuzzySearchMatch>({
  type: 'object',
  properties: { path: relativePath, score: { type: 'integer', description: 'Higher is better.' }, type: entryType },
});

export const fuzzySearchResponseSchema = schemaOf<FuzzySearchResponse>({
  type: 'object',
  properties: { matches: { type: 'array', items: { $ref: '#/components/schemas/FuzzySearchMatch' } }, total: { type: 'integer' } },
});

export const contentSearchMatchSchema = schemaOf<ContentSearchMatch>({
  type: 'object',
  properties: {
    path: relativePath,
    line: { type: 'integer', description: '1-based.' },
    column: { type: 'integer', description: '1-based, in bytes.' },
    text: { type: 'string', description: 'The whole line.' },
    context: { type: 'string', optional: true, description: 'With contextLines: the lines around the match, and its own, joined by newlines.' },
  },
});

export const contentSearchResponseSchema = schemaOf<ContentSearchResponse>({
  type: 'object',
  properties: {
    query: { type: 'string' },
    matches: { type: 'array', items: { $ref: '#/components/schemas/ContentSearchMatch' } },
    total: { type: 'integer' },
  },
});

export const fileEventSchema = schemaOf<FileEvent>({
  type: 'object',
  description: 'One line of a watch stream (lines reading [keepalive] only keep the stream open).',
  properties: {
    op: { type: 'string', enum: ['CREATE', 'WRITE', 'REMOVE', 'RENAME', 'CHMOD'] },
    name: { type: 'string', description: 'The entry\'s name.' },
    path: { type: 'string', description: 'The folder it is in (absolute).' },
    error: { type: 'string', nullable: true },
  },
});
