import fs from 'node:fs';
import path from 'node:path';

/** The part of jest's global config that tells which tests a run selected. */
export interface JestSelection {
  rootDir: string;
  testPathPatterns?: { isSet(): boolean; toExecutor(options: { rootDir: string }): { isMatch(absPath: string): boolean } };
  findRelatedTests?: boolean;
  onlyChanged?: boolean;
  changedSince?: string;
  watch?: boolean;
  watchAll?: boolean;
}

export function listTestFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : listTestFiles(full);
    return entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

/**
 * True when the run certainly selects unit tests only, so the services need not start. Any
 * selection we cannot read exactly (related or changed files, watch mode) counts as "maybe not".
 */
export function onlyUnitTestsSelected(selection: JestSelection, testFiles: string[]): boolean {
  const selected = selectedTestFiles(selection, testFiles);
  const unitDir = path.join(selection.rootDir, 'test', 'unit') + path.sep;
  return selected !== undefined && selected.length > 0 && selected.every((file) => file.startsWith(unitDir));
}

/** The test files the run selects by path patterns; undefined when that cannot be read exactly (all may run). */
export function selectedTestFiles(selection: JestSelection, testFiles: string[]): string[] | undefined {
  if (selection.findRelatedTests || selection.onlyChanged || selection.changedSince || selection.watch || selection.watchAll) return undefined;
  const patterns = selection.testPathPatterns;
  if (!patterns || !patterns.isSet()) return undefined;
  const executor = patterns.toExecutor({ rootDir: selection.rootDir });
  return testFiles.filter((file) => executor.isMatch(file));
}
