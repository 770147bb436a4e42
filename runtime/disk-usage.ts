import { execFile } from 'node:child_process';

/**
 * Bytes of disk the files under `folders` occupy: allocated blocks, hard links counted once, on
 * the folders' own file system only (`du -sx --block-size=1`). Allocated rather than apparent
 * sizes, so a sparse file costs what it holds, not what it claims.
 *
 * A live sandbox creates and removes files while it is walked: `du` then warns about entries that
 * vanished and exits with 1, yet its total is right for what remained, so a printed total is
 * taken whatever the exit status.
 */
export function diskUsageBytes(folders: string[]): Promise<number> {
  if (folders.length === 0) return Promise.resolve(0);
  return new Promise((resolve, reject) => {
    execFile('du', ['-sx', '--block-size=1', '--total', ...folders], { maxBuffer: 1 << 20 }, (err, stdout) => {
      const total = /^(\d+)\s+total$/m.exec(stdout);
      if (total) return resolve(Number(total[1]));
      reject(new Error(`du printed no total${err ? ` (${err.message})` : ''}: ${stdout.slice(0, 200)}`));
    });
  });
}
