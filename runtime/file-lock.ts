import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** A lock held on a file; release() lets the next holder in. */
export interface FileLock {
  release(): void;
}

/**
 * Takes an exclusive lock on `file` across processes, waiting for any holder to let go. The lock
 * is held by a `flock` child whose only job is to wait for its standard input to close: when this
 * process ends in any way (a crash, SIGKILL), the kernel closes the pipe, the child exits and the
 * lock is free, so a lock is never left behind by a dead worker.
 */
export function lockFile(file: string): Promise<FileLock> {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  return new Promise((resolve, reject) => {
    const holder = spawn('flock', ['--exclusive', file, 'sh', '-c', 'echo locked; exec cat >/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    let held = false;
    holder.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    holder.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      if (held || !chunk.includes('locked')) return;
      held = true;
      // The holder must not keep this process alive by itself, nor its pipes.
      holder.unref();
      for (const stream of [holder.stdout, holder.stderr]) (stream as unknown as { unref?: () => void }).unref?.();
      resolve({ release: () => holder.stdin.end() });
    });
    holder.on('error', reject);
    holder.on('close', (code) => {
      if (!held) reject(new Error(`could not lock ${file}: flock exited ${code}${stderr ? `: ${stderr.trim()}` : ''}`));
    });
  });
}
