import { schemaOf } from './schema';

/** The filesystem API (`/filesystem/{path}`, `/filesystem/tree/{path}`): its answers and bodies. */

export interface FileInfo {
  path: string;
  name: string;
  /** Octal text without a leading 0, for example "644". */
  permissions: string;
  size: number;
  lastModified: string;
  owner: string;
  group: string;
}

/** A file read as text (GET /filesystem/{path} of a file). */
export interface FileContent extends FileInfo {
  content: string;
}

export interface Directory {
  path: string;
  name: string;
  files: FileInfo[];
  subdirectories: Directory[];
}

/** A tree cut by its depth or entry cap says so at its top. */
export interface DirectoryTree extends Directory {
  truncated: boolean;
}

/** The JSON body of PUT or POST /filesystem/{path} (multipart and raw bytes are taken too). */
export interface FileWrite {
  content?: string;
  isDirectory?: boolean;
  /** Octal text, for example "0644". */
  permissions?: string;
}

/** What a write or a delete answers. */
export interface PathMessage {
  path: string;
  message: string;
}

const text = (description?: string) => ({ type: 'string' as const, description });
const fileFields = {
  path: text('Absolute path inside the sandbox.'),
  name: text(),
  permissions: { type: 'string' as const, description: 'Octal, without a leading 0 ("644").' },
  size: { type: 'integer' as const, description: 'Bytes.' },
  lastModified: { type: 'string' as const, format: 'date-time' },
  owner: text(),
  group: text(),
};

export const fileInfoSchema = schemaOf<FileInfo>({ type: 'object', properties: fileFields });

export const fileContentSchema = schemaOf<FileContent>({ type: 'object', description: 'A text file and its content.', properties: { ...fileFields, content: text() } });

const directoryFields = {
  path: text('Absolute path inside the sandbox.'),
  name: text(),
  files: { type: 'array' as const, items: { $ref: '#/components/schemas/FileInfo' } },
  subdirectories: { type: 'array' as const, items: { $ref: '#/components/schemas/Directory' } },
};

export const directorySchema = schemaOf<Directory>({ type: 'object', properties: directoryFields });

export const directoryTreeSchema = schemaOf<DirectoryTree>({
  type: 'object',
  description: 'A directory and what is below it, bounded by depth and entry count.',
  properties: { ...directoryFields, truncated: { type: 'boolean', description: 'The depth or the entry cap cut it.' } },
});

export const fileWriteSchema = schemaOf<FileWrite>({
  type: 'object',
  properties: {
    content: { ...text('Text to write (a new or replaced file).'), optional: true },
    isDirectory: { type: 'boolean', optional: true, description: 'Create a directory instead (no content).' },
    permissions: { type: 'string', optional: true, pattern: '^0?[0-7]{3}$', description: 'Octal, for example "0644".' },
  },
});

export const pathMessageSchema = schemaOf<PathMessage>({ type: 'object', properties: { path: text(), message: text() } });

/** PUT /filesystem/tree/{path}: files to write below the path, by relative path, as text. */
export interface TreeRequest {
  files: Record<string, string>;
}

export const treeRequestSchema = schemaOf<TreeRequest>({
  type: 'object',
  properties: { files: { type: 'object', additionalProperties: { type: 'string' }, description: 'Relative path -> text content; folders are created as needed.' } },
});
