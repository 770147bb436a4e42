import { spawn } from 'node:child_process';

export interface ToolResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  /** Its standard output, when asked for (`stdout: true`): a document it prints (skopeo inspect --raw). */
  stdout?: string;
}

/** Standard output kept at most: a manifest or an index is a few KiB. */
const MAX_STDOUT = 4 << 20;

/**
 * Runs one of the image tools (skopeo, umoci) with its own small environment, never a shell,
 * and answers its exit and standard error (the last 64 KiB: enough for any message it prints).
 * A tool that cannot be run at all is an error saying how to install it.
 */
export function runImageTool(binary: string, args: string[], env: Record<string, string>, options: { stdout?: boolean } = {}): Promise<ToolResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { stdio: ['ignore', options.stdout ? 'pipe' : 'ignore', 'pipe'], env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', ...env } });
    let stderr = '';
    let stdout = '';
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      if (stdout.length < MAX_STDOUT) stdout += chunk;
    });
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-65_536);
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'ENOENT' ? new Error(`${binary} is not installed (run scripts/install-deps.sh)`) : err);
    });
    child.on('close', (code, signal) => resolve({ code, signal, stderr, ...(options.stdout ? { stdout } : {}) }));
  });
}
