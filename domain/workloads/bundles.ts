import path from 'node:path';

/** Largest code bundle accepted by default (HANGAR_BUNDLE_LIMIT_BYTES overrides it). */
export const DEFAULT_BUNDLE_LIMIT_BYTES = 100 * 1024 * 1024;

const SHA256 = /^[0-9a-f]{64}$/;

/**
 * Bundles are content-addressed under `<dataDir>/bundles/`: the archive as `<sha256>.tar.gz`,
 * unpacked once into `<sha256>/`. The same code uploaded twice is stored once.
 */
export function bundlePaths(dataDir: string, sha256: string) {
  if (!SHA256.test(sha256)) throw new Error(`not a sha256 digest: '${sha256}'`);
  const root = path.join(dataDir, 'bundles');
  return { root, archive: path.join(root, `${sha256}.tar.gz`), unpacked: path.join(root, sha256) };
}

/** Entry types a bundle may hold: files and folders. Links could point the unpacker outside the folder. */
const ALLOWED_ENTRY_TYPES = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory']);

/**
 * Why an archive entry is refused, or undefined when it is fine: absolute paths, `..` segments
 * and anything but plain files and folders. Metadata entries (pax headers) are the reader's business.
 */
export function bundleEntryProblem(entryPath: string, type: string): string | undefined {
  if (entryPath.includes('\0')) return `entry '${entryPath.replace(/\0/g, '\\0')}' has a NUL byte in its name`;
  if (entryPath.startsWith('/') || /^[A-Za-z]:[\\/]/.test(entryPath)) return `entry '${entryPath}' has an absolute path`;
  if (entryPath.split(/[\\/]/).includes('..')) return `entry '${entryPath}' has a '..' segment`;
  if (!ALLOWED_ENTRY_TYPES.has(type)) return `entry '${entryPath}' is a ${type}; only files and folders are allowed`;
  return undefined;
}
