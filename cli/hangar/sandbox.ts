import { parseArgs } from './args';
import { call } from './client';
import type { CommandContext } from './context';
import { loadCredentials } from './credentials';
import { CommandError, UsageError } from './errors';
import { sandboxUrl } from './sandbox-address';
import { copy, CP_USAGE } from './sandbox-cp';
import { pipedShell, terminalShell } from './sandbox-shell';

const EXEC_USAGE = 'usage: hangar sandbox exec <name> -- <command...>';
const SHELL_USAGE = 'usage: hangar sandbox shell <name> (a terminal when stdin is one; else stdin is the script)';
const USAGE = `usage: hangar sandbox exec|shell|cp ...\n  ${EXEC_USAGE.slice(7)}\n  ${SHELL_USAGE.slice(7)}\n  ${CP_USAGE.slice(7)}`;

/** The words quoted for the sandbox's shell, so `-- sh -c 'exit 3'` runs as typed. */
export function shellCommand(words: string[]): string {
  return words.map((word) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`)).join(' ');
}

interface ProcessResult {
  exitCode: number | null;
  stdout?: string;
  stderr?: string;
  status?: string;
}

/**
 * `hangar sandbox exec <name> -- <command...>`: runs the command in the sandbox through its own
 * API (metadata.url, POST /process waiting for completion), prints its stdout and stderr, and
 * exits with its exit code.
 */
async function exec(ctx: CommandContext, argv: string[]): Promise<number> {
  const args = parseArgs(argv, []);
  const [name, ...extra] = args.positional;
  if (!name || extra.length > 0 || args.rest.length === 0) throw new UsageError(EXEC_USAGE);
  const credentials = loadCredentials(ctx.env);
  const url = await sandboxUrl(credentials, name);
  const result = await call<ProcessResult>(credentials, 'POST', `${url}/process`, { command: shellCommand(args.rest), waitForCompletion: true });
  if (result.stdout) ctx.out(result.stdout);
  if (result.stderr) ctx.err(result.stderr);
  if (typeof result.exitCode !== 'number') throw new CommandError(`the command did not finish (status ${result.status ?? 'unknown'})`);
  return result.exitCode;
}

/**
 * `hangar sandbox shell <name>`: on a terminal, an interactive shell on one of the sandbox's
 * (raw mode, resize followed); with stdin piped, a shell reading it as its script. Exits with the
 * shell's exit code.
 */
async function shell(ctx: CommandContext, argv: string[]): Promise<number> {
  const args = parseArgs(argv, []);
  const [name, ...extra] = args.positional;
  if (!name || extra.length > 0 || args.rest.length > 0) throw new UsageError(SHELL_USAGE);
  const credentials = loadCredentials(ctx.env);
  const url = await sandboxUrl(credentials, name);
  if (process.stdin.isTTY && process.stdout.isTTY) return terminalShell(credentials, url, { input: process.stdin, output: process.stdout });
  try {
    return await pipedShell(ctx, credentials, url, process.stdin);
  } finally {
    // stdin may still be open when the shell exited first (`exit` before the end of its input).
    process.stdin.destroy();
  }
}

export async function sandbox(ctx: CommandContext): Promise<number> {
  const [sub, ...rest] = ctx.argv;
  if (sub === 'exec') return exec(ctx, rest);
  if (sub === 'shell') return shell(ctx, rest);
  if (sub === 'cp') return copy(ctx, parseArgs(rest, []).positional);
  throw new UsageError(USAGE);
}
