import { TREE_MAX_ENTRIES } from './contract/limits';
import type { Directory } from './contract/filesystem';
import type { SandboxFiles } from './filesystem';
import { joinPath } from './fs-paths';
import { badRequest } from './http';

/**
 * The sandbox paths a tree of files lands on: each key of `files` is a path relative to `root`
 * (a leading slash is taken as relative too, as the reference does). A key that would leave the
 * root, or that names nothing, is refused with its own name, before anything is written.
 */
export function treeTargets(root: string, files: Record<string, unknown>): { target: string; content: string }[] {
  return Object.entries(files).map(([relative, content]) => {
    const at = `files[${JSON.stringify(relative)}]`;
    if (typeof content !== 'string') throw badRequest(`'${at}' must be a string (the file's text)`);
    if (relative.includes('\0')) throw badRequest(`'${at}': the path must not contain NUL`);
    const parts = relative.split('/').filter((part) => part !== '' && part !== '.');
    if (parts.includes('..')) throw badRequest(`'${at}': the path must not contain '..'`);
    if (parts.length === 0) throw badRequest(`'${at}': the path names no file`);
    return { target: parts.reduce(joinPath, root), content };
  });
}

/** Writes every file of the tree below `root` (folders created as needed); answers the root's listing. */
export async function writeTree(files: SandboxFiles, root: string, tree: Record<string, unknown>): Promise<Directory> {
  const targets = treeTargets(root, tree);
  await files.makeDirectory(root);
  for (const { target, content } of targets) await files.writeFile(target, content);
  const { truncated: _cut, ...directory } = await files.tree(root, { depth: 1, maxEntries: TREE_MAX_ENTRIES });
  return directory;
}

/** Deletes a directory (with what is in it if `recursive`); anything else is refused. */
export async function deleteTree(files: SandboxFiles, root: string, recursive: boolean): Promise<void> {
  if (!(await files.info(root)).isDirectory) throw badRequest(`${root} is not a directory`);
  await files.remove(root, recursive);
}
