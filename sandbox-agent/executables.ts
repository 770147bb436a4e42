import fs from 'node:fs';
import path from 'node:path';

/** Whether `file` is a file this process may execute. */
export function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * Where the sandbox's image has `name` on the search path `searchPath` (a PATH value), as an
 * absolute path. Relative entries are skipped: they would name whatever folder the agent runs in.
 */
export function findOnPath(name: string, searchPath: string): string | undefined {
  return searchPath
    .split(':')
    .filter((dir) => path.isAbsolute(dir))
    .map((dir) => path.join(dir, name))
    .find(isExecutable);
}
