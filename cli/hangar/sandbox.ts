import { parseArgs } from './args';
import { call } from './client';
import type { CommandContext } from './context';
import { loadCredentials, type Credentials } from './credentials';
import { CommandError, UsageError } from './errors';

const USAGE = 'usage: hangar sandbox exec <name> -- <command...>';

/** The words quoted for the sandbox's shell, so `-- sh -c 'exit 3'` runs as typed. */
export function shellCommand(words: string[]): string {
  return words.map((word) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`)).join(' ');
}

/** The address of a sandbox's own API (its metadata.url), without a trailing slash. */
export async function sandboxUrl(credentials: Credentials, name: string): Promise<string> {
  const sandbox = await call<{ metadata?: { url?: string } }>(credentials, 'GET', `/v0/sandboxes/${encodeURIComponent(name)}`);
  const url = sandbox.metadata?.url;
  if (!url) throw new CommandError(`sandbox '${name}' has no address yet: see hangar get sandboxes ${name}`);
  return url.replace(/\/+$/, '');
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
  if (!name || extra.length > 0 || args.rest.length === 0) throw new UsageError(USAGE);
  const credentials = loadCredentials(ctx.env);
  const url = await sandboxUrl(credentials, name);
  const result = await call<ProcessResult>(credentials, 'POST', `${url}/process`, { command: shellCommand(args.rest), waitForCompletion: true });
  if (result.stdout) ctx.out(result.stdout);
  if (result.stderr) ctx.err(result.stderr);
  if (typeof result.exitCode !== 'number') throw new CommandError(`the command did not finish (status ${result.status ?? 'unknown'})`);
  return result.exitCode;
}

export async function sandbox(ctx: CommandContext): Promise<number> {
  const [sub, ...rest] = ctx.argv;
  if (sub !== 'exec') throw new UsageError(USAGE);
  return exec(ctx, rest);
}
