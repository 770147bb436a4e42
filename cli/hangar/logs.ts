import { parseArgs } from './args';
import { call } from './client';
import type { CommandContext } from './context';
import { loadCredentials } from './credentials';
import { UsageError } from './errors';
import { findKind } from './kinds';
import { sandboxUrl } from './sandbox-address';

const USAGE = 'usage: hangar logs sandboxes <name> <process> (the API serves logs only for the processes of a sandbox)';

/**
 * `hangar logs sandboxes <name> <process>`: a sandbox process's output so far (its name or PID),
 * from the sandbox's own API. No other kind has a log route in the API, so asking for one is a
 * usage error that says so.
 */
export async function logs(ctx: CommandContext): Promise<number> {
  const args = parseArgs(ctx.argv, []);
  const [kindWord, name, processId, ...extra] = args.positional;
  const kind = findKind(kindWord);
  if (kind.name !== 'sandboxes') throw new UsageError(`the API serves no logs for ${kind.name}: ${USAGE}`);
  if (!name || !processId || extra.length > 0) throw new UsageError(USAGE);
  const credentials = loadCredentials(ctx.env);
  const url = await sandboxUrl(credentials, name);
  const answer = await call<{ logs?: string }>(credentials, 'GET', `${url}/process/${encodeURIComponent(processId)}/logs`);
  ctx.out(answer.logs ?? '');
  return 0;
}
