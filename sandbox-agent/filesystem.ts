import { constants, readFileSync, type Stats } from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Directory, DirectoryTree, FileContent, FileInfo } from './contract/filesystem';
import { joinPath, type PathPolicy } from './fs-paths';
import { HttpError, badRequest } from './http';

export interface TreeBounds {
  depth: number;
  maxEntries: number;
}

/** Largest file returned inline as JSON text; bigger ones are downloaded as bytes. */
export const MAX_INLINE_BYTES = 16 * 1024 * 1024;

/**
 * The sandbox's files as the API and the MCP tools see them. Every path goes through the
 * policy twice: as asked, and as really reached after symlinks.
 */
export class SandboxFiles {
  private readonly users: Map<number, string>;
  private readonly groups: Map<number, string>;

  constructor(
    readonly policy: PathPolicy,
    private readonly writableRoots: string[],
  ) {
    this.users = namesById(readOptional('/etc/passwd'));
    this.groups = namesById(readOptional('/etc/group'));
  }

  parse(encoded: string): string {
    return this.policy.parse(encoded);
  }

  /** The real path behind an existing path that may be read. */
  async resolveReadable(asked: string): Promise<string> {
    this.policy.assertReadable(asked, asked);
    const { target, missing } = await this.reach(asked);
    // Checked before "not found": whether a path exists in a hidden folder is not told either.
    this.policy.assertReadable(target, asked);
    if (missing) throw Object.assign(new Error(`${asked} does not exist`), { code: 'ENOENT' });
    return target;
  }

  /** The real path a write to `asked` reaches (it may not exist yet), if writes may go there. */
  async resolveWritable(asked: string): Promise<string> {
    this.policy.assertWritable(asked, asked);
    const { target, danglingLink } = await this.reach(asked);
    // A dangling symlink resolves to nothing, yet writing through it would create its target.
    if (danglingLink) throw new HttpError(403, `${asked} goes through a symbolic link to a missing target`);
    this.policy.assertWritable(target, asked);
    return target;
  }

  /** Where a path really leads: its deepest existing part resolved (symlinks followed), the rest appended. */
  private async reach(asked: string): Promise<{ target: string; missing: boolean; danglingLink: boolean }> {
    const rest: string[] = [];
    let existing = asked;
    for (;;) {
      try {
        const real = await fsp.realpath(existing);
        const target = path.posix.join(real, ...rest);
        const danglingLink = rest.length > 0 && (await fsp.lstat(path.posix.join(real, rest[0])).then((s) => s.isSymbolicLink(), () => false));
        return { target, missing: rest.length > 0, danglingLink };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || existing === '/') throw err;
        rest.unshift(path.posix.basename(existing));
        existing = path.posix.dirname(existing);
      }
    }
  }

  async info(asked: string): Promise<{ info: FileInfo; isDirectory: boolean; real: string }> {
    const real = await this.resolveReadable(asked);
    const stats = await fsp.stat(real);
    return { info: this.describe(asked, stats), isDirectory: stats.isDirectory(), real };
  }

  async readText(asked: string): Promise<FileContent> {
    const { info, isDirectory, real } = await this.info(asked);
    if (isDirectory) throw badRequest(`${asked} is a directory`);
    if (info.size > MAX_INLINE_BYTES) {
      throw new HttpError(413, `${asked} is ${info.size} bytes; files above ${MAX_INLINE_BYTES} bytes are read with ?download=true`);
    }
    return { ...info, content: await fsp.readFile(real, 'utf8') };
  }

  async tree(asked: string, bounds: TreeBounds): Promise<DirectoryTree> {
    const real = await this.resolveReadable(asked);
    if (!(await fsp.stat(real)).isDirectory()) throw badRequest('path is not a directory');
    let entries = 0;
    let truncated = false;
    const walk = async (shownPath: string, realPath: string, depthLeft: number): Promise<Directory> => {
      const directory: Directory = { path: shownPath, name: path.posix.basename(shownPath) || '/', files: [], subdirectories: [] };
      if (depthLeft === 0) {
        truncated = true;
        return directory;
      }
      const names = (await fsp.readdir(realPath)).sort();
      for (const name of names) {
        if (entries >= bounds.maxEntries) {
          truncated = true;
          break;
        }
        const childReal = joinPath(realPath, name);
        if (this.policy.isHidden(childReal)) continue;
        // lstat: a symlink is listed as itself and never followed, so a tree cannot loop or leave.
        const stats = await fsp.lstat(childReal).catch(() => undefined);
        if (!stats) continue;
        entries++;
        const childShown = joinPath(shownPath, name);
        if (stats.isDirectory()) directory.subdirectories.push(await walk(childShown, childReal, depthLeft - 1));
        else directory.files.push(this.describe(childShown, stats));
      }
      return directory;
    };
    const root = await walk(asked, real, bounds.depth);
    return { ...root, truncated };
  }

  async writeFile(asked: string, content: string | Buffer | Readable, permissions?: number): Promise<void> {
    const target = await this.resolveWritable(asked);
    await fsp.mkdir(path.posix.dirname(target), { recursive: true });
    // O_NOFOLLOW: a symlink swapped in since the check is refused, not written through.
    const handle = await fsp.open(target, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, permissions ?? 0o644);
    try {
      if (typeof content === 'string' || Buffer.isBuffer(content)) await handle.writeFile(content);
      else for await (const chunk of content as AsyncIterable<Buffer>) await handle.write(chunk);
      if (permissions !== undefined) await handle.chmod(permissions);
    } finally {
      await handle.close();
    }
  }

  async makeDirectory(asked: string, permissions?: number): Promise<void> {
    const target = await this.resolveWritable(asked);
    await fsp.mkdir(target, { recursive: true });
    if (permissions !== undefined) await fsp.chmod(target, permissions);
  }

  async setPermissions(asked: string, permissions: number): Promise<void> {
    await fsp.chmod(await this.resolveWritable(asked), permissions);
  }

  /** Replaces the one occurrence of `oldText` (an edit that matches zero or several places is refused). */
  async edit(asked: string, oldText: string, newText: string): Promise<void> {
    const target = await this.resolveWritable(asked);
    const text = await fsp.readFile(target, 'utf8');
    const first = text.indexOf(oldText);
    if (oldText === '' || first < 0) throw badRequest(`the text to replace was not found in ${asked}`);
    if (text.indexOf(oldText, first + 1) >= 0) throw badRequest(`the text to replace occurs more than once in ${asked}`);
    await this.writeFile(asked, text.slice(0, first) + newText + text.slice(first + oldText.length));
  }

  async remove(asked: string, recursive: boolean): Promise<void> {
    // The entry itself is removed, never what a symlink points at: resolve only its folder.
    const parent = await this.resolveWritable(path.posix.dirname(asked));
    const target = joinPath(parent, path.posix.basename(asked));
    this.policy.assertWritable(target, asked);
    if (this.writableRoots.includes(target) || asked === '/') throw badRequest(`${asked} is a root folder of the sandbox and cannot be deleted`);
    const stats = await fsp.lstat(target);
    if (!stats.isDirectory()) return fsp.unlink(target);
    if (!recursive && (await fsp.readdir(target)).length > 0) throw badRequest(`${asked} is a directory that is not empty: use recursive=true`);
    await fsp.rm(target, { recursive: true });
  }

  private describe(shownPath: string, stats: Stats): FileInfo {
    return {
      path: shownPath,
      name: path.posix.basename(shownPath) || '/',
      permissions: (stats.mode & 0o777).toString(8),
      size: stats.size,
      lastModified: stats.mtime.toISOString(),
      owner: this.users.get(stats.uid) ?? String(stats.uid),
      group: this.groups.get(stats.gid) ?? String(stats.gid),
    };
  }
}

/** "0644", "644" or "755" -> mode bits. */
export function parsePermissions(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^0?[0-7]{3}$/.test(text)) throw badRequest(`'permissions' must be octal text such as "644" or "0755", got '${text}'`);
  return parseInt(text, 8);
}

/** /etc/passwd or /etc/group text -> id -> name. */
export function namesById(text: string): Map<number, string> {
  const names = new Map<number, string>();
  for (const line of text.split('\n')) {
    const fields = line.split(':');
    if (fields.length < 3) continue;
    const id = Number(fields[2]);
    if (Number.isInteger(id) && !names.has(id)) names.set(id, fields[0]);
  }
  return names;
}

function readOptional(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
