import fs from 'node:fs';
import path from 'node:path';

/** The first `binary` on PATH; a missing one is an error that says how to install it. */
export function findOnPath(binary: string): string {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':')) {
    const candidate = path.join(dir, binary);
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new Error(`${binary} is not installed (run scripts/install-deps.sh)`);
}
