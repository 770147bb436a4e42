import { spawn } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from '../../scripts/stack/binaries';

/** How a run of the built `hangar` binary ended. */
export interface HangarRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export const hangarBinary = () => path.join(repoRoot(), 'dist/cli/hangar.js');

/**
 * Runs the built `hangar` (dist/cli/hangar.js) as a child process with `home` as its HOME and
 * config folder, `stdin` piped in (so it is never a terminal), and the environment given only.
 */
export function runHangar(home: string, args: string[], env: Record<string, string> = {}, stdin: string | Buffer = ''): Promise<HangarRun> {
  return runCliScript(hangarBinary(), home, args, env, stdin);
}

/** Runs one of the built CLI scripts (dist/cli/...) as runHangar runs hangar. */
export function runCliScript(script: string, home: string, args: string[], env: Record<string, string> = {}, stdin: string | Buffer = ''): Promise<HangarRun> {
  const child = spawn(process.execPath, [script, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: home, HANGAR_CONFIG_DIR: path.join(home, 'config'), ...env },
  });
  child.stdin.on('error', () => undefined);
  child.stdin.end(stdin);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
