import type { Dirent } from 'node:fs';
import fsp from 'node:fs/promises';
import { joinPath } from './fs-paths';

/** Folders find, search and content search do not enter unless told otherwise, as the reference. */
export const DEFAULT_EXCLUDED_DIRS: readonly string[] = ['node_modules', 'vendor', '.git', 'dist', 'build', 'target', '__pycache__', '.venv', '.next', 'coverage'];

export interface WalkOptions {
  /** Folder names never entered (nor listed), at any depth. */
  excludeDirs: ReadonlySet<string>;
  /** Names starting with a dot are neither listed nor entered. */
  excludeHidden: boolean;
  /** Real paths the API never shows (PathPolicy's hidden roots). */
  isHidden: (realPath: string) => boolean;
}

export interface WalkEntry {
  /** Relative to the folder walked, with `/` between segments. */
  relative: string;
  real: string;
  /** A symbolic link is itself and never followed, so a walk can neither loop nor leave. */
  kind: 'file' | 'directory' | 'other';
}

/** Byte order of the names' UTF-8, as ripgrep sorts a folder's entries. */
export function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/**
 * Everything below `root` (a real folder path), depth first, each folder's entries by name in byte
 * order and entered where they come: ripgrep's `--sort path` order, so that the content search
 * answers alike with ripgrep and without it. Unreadable folders are passed over.
 */
export async function* walk(root: string, options: WalkOptions): AsyncGenerator<WalkEntry> {
  yield* walkBelow(root, '', options);
}

async function* walkBelow(real: string, relative: string, options: WalkOptions): AsyncGenerator<WalkEntry> {
  let entries: Dirent[];
  try {
    entries = await fsp.readdir(real, { withFileTypes: true });
  } catch {
    return;
  }
  entries.sort((a, b) => byteOrder(a.name, b.name));
  for (const entry of entries) {
    if (options.excludeHidden && entry.name.startsWith('.')) continue;
    const childReal = joinPath(real, entry.name);
    if (options.isHidden(childReal)) continue;
    const childRelative = relative === '' ? entry.name : `${relative}/${entry.name}`;
    if (entry.isDirectory()) {
      if (options.excludeDirs.has(entry.name)) continue;
      yield { relative: childRelative, real: childReal, kind: 'directory' };
      yield* walkBelow(childReal, childRelative, options);
    } else yield { relative: childRelative, real: childReal, kind: entry.isFile() ? 'file' : 'other' };
  }
}
