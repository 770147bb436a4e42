/**
 * What `ldd` says a host binary needs: its dynamic loader (the program interpreter) and the
 * shared libraries it loads, each as the host resolved it. The kernel's vDSO has no file and
 * is left out.
 */
export interface SharedLibraries {
  interpreter?: string;
  libraries: { name: string; path: string }[];
  /** Libraries the host could not find (`=> not found`). */
  missing: string[];
}

export function parseLddOutput(text: string): SharedLibraries {
  const result: SharedLibraries = { libraries: [], missing: [] };
  for (const line of text.split('\n').map((l) => l.trim())) {
    const resolved = /^(\S+) => (\S+)(?: \(0x[0-9a-f]+\))?$/.exec(line);
    if (resolved) {
      result.libraries.push({ name: resolved[1], path: resolved[2] });
      continue;
    }
    const missing = /^(\S+) => not found$/.exec(line);
    if (missing) {
      result.missing.push(missing[1]);
      continue;
    }
    // The loader is the one line naming an absolute path without an arrow.
    const direct = /^(\/\S+) \(0x[0-9a-f]+\)$/.exec(line);
    if (direct) result.interpreter = direct[1];
  }
  return result;
}
