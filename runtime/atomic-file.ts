import fsp from 'node:fs/promises';

/**
 * Writes `file` so that a reader sees the old content or the new, never half of it (a temporary
 * file in the same folder, then a rename). The node's records that a crash must not tear go
 * through here: sandbox state, removals, the port event relay's cursors.
 */
export async function writeFileAtomically(file: string, content: string | Uint8Array, mode?: number): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await fsp.writeFile(temporary, content, mode === undefined ? undefined : { mode });
  await fsp.rename(temporary, file);
}
