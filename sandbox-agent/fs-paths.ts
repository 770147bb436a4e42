import { HttpError, badRequest } from './http';

/**
 * Which sandbox paths the filesystem API serves. The mount namespace already confines the agent
 * to the sandbox's tree; this is the second wall: no `..`, no encoded tricks, and (checked on
 * real paths, after symlinks) nothing under the hidden roots and no writes outside the writable
 * ones.
 */
export class PathPolicy {
  private readonly writable: string[];
  /** Folders never read nor listed (real paths). */
  readonly hidden: string[];

  constructor(writableRoots: string[], hiddenRoots: string[]) {
    this.writable = writableRoots.map(stripSlash);
    this.hidden = hiddenRoots.map(stripSlash);
  }

  /**
   * The absolute sandbox path named by the rest of a URL (still percent-encoded). Rejected
   * rather than normalized: a path with `..` anywhere, including encoded as %2e%2e or behind an
   * encoded slash, is a mistake or an attack, never a useful request.
   */
  parse(encoded: string): string {
    let decoded: string;
    try {
      decoded = decodeURIComponent(encoded);
    } catch {
      throw badRequest('the path is not valid percent-encoding');
    }
    if (decoded.includes('\0')) throw badRequest('the path must not contain NUL');
    const parts = decoded.split('/').filter((part) => part !== '' && part !== '.');
    if (parts.includes('..')) throw badRequest("the path must not contain '..'");
    const path = `/${parts.join('/')}`;
    if (path.length > 4096) throw badRequest('the path is too long');
    return path;
  }

  isHidden(realPath: string): boolean {
    return this.hidden.some((root) => within(realPath, root));
  }

  isWritable(realPath: string): boolean {
    return this.writable.some((root) => within(realPath, root));
  }

  assertReadable(realPath: string, asked: string): void {
    if (this.isHidden(realPath)) throw new HttpError(403, `${asked} is outside the folders this API serves`);
  }

  assertWritable(realPath: string, asked: string): void {
    if (this.isHidden(realPath) || !this.isWritable(realPath)) {
      throw new HttpError(403, `${asked} is outside the writable folders (${this.writable.join(', ')})`);
    }
  }
}

function stripSlash(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

export function within(path: string, root: string): boolean {
  return root === '/' || path === root || path.startsWith(`${root}/`);
}

export function joinPath(parent: string, name: string): string {
  return parent === '/' ? `/${name}` : `${parent}/${name}`;
}
