import path from 'node:path';

/** Largest build context accepted by default (HANGAR_BUILD_CONTEXT_LIMIT_BYTES overrides it). */
export const DEFAULT_BUILD_CONTEXT_LIMIT_BYTES = 200 * 1024 * 1024;
/** Largest Dockerfile read: the instructions, never data. */
export const DOCKERFILE_LIMIT_BYTES = 1024 * 1024;

const SHA256 = /^[0-9a-f]{64}$/;

/** Uploaded contexts are content-addressed under `<dataDir>/images/contexts/<sha256>.tar.gz`. */
export function buildContextPaths(dataDir: string, sha256: string) {
  if (!SHA256.test(sha256)) throw new Error(`not a sha256 digest: '${sha256}'`);
  const root = path.join(dataDir, 'images', 'contexts');
  return { root, archive: path.join(root, `${sha256}.tar.gz`) };
}

/** Entry types a context may hold. Links are checked for where they point; devices and pipes have no place in a build. */
const ALLOWED = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory', 'SymbolicLink', 'Link']);

/** The entry's path as it sits in the context: './' and trailing slashes dropped. */
export function contextPath(entryPath: string): string {
  return path.posix.normalize(entryPath).replace(/^(\.\/)+/, '').replace(/\/+$/, '');
}

function escapes(relative: string): boolean {
  return relative === '..' || relative.startsWith('../') || path.posix.isAbsolute(relative);
}

/**
 * Why a context's entry is refused, or undefined when it is fine: a NUL in its name, an absolute
 * path, a `..` segment, a type other than files, folders and links, or a link (symbolic or hard)
 * whose target lies outside the context. A symbolic link's target is read from the link's folder,
 * as a builder copying the context would.
 */
export function contextEntryProblem(entryPath: string, type: string, linkpath?: string): string | undefined {
  if (entryPath.includes('\0')) return `entry '${entryPath.replace(/\0/g, '\\0')}' has a NUL byte in its name`;
  if (path.posix.isAbsolute(entryPath)) return `entry '${entryPath}' has an absolute path`;
  if (entryPath.split('/').includes('..')) return `entry '${entryPath}' has a '..' segment`;
  if (!ALLOWED.has(type)) return `entry '${entryPath}' is a ${type}; only files, folders and links inside the context are allowed`;
  if (type === 'SymbolicLink' || type === 'Link') {
    const target = linkpath ?? '';
    if (target === '' || target.includes('\0')) return `entry '${entryPath}' is a link without a target`;
    const resolved = type === 'Link' ? path.posix.normalize(target) : path.posix.normalize(path.posix.join(path.posix.dirname(contextPath(entryPath)), target));
    if (path.posix.isAbsolute(target) || escapes(resolved)) return `entry '${entryPath}' is a link to '${target}', outside the build context`;
  }
  return undefined;
}
