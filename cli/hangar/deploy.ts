import fs from 'node:fs';
import path from 'node:path';
import { deployFolder } from '../deploy';
import { parseArgs } from './args';
import type { CommandContext } from './context';
import { loadCredentials } from './credentials';
import { CommandError, UsageError } from './errors';

const USAGE = 'usage: hangar deploy <folder with hangar.json> [--name <name>]';

/**
 * `hangar deploy <folder>`: the deploy of cli/deploy.ts (create or update, upload the folder as
 * the next revision, wait for it) with the stored credentials. Exit 0 once DEPLOYED, 1 otherwise.
 */
export async function deploy(ctx: CommandContext): Promise<number> {
  const args = parseArgs(ctx.argv, ['name']);
  const [folder, ...extra] = args.positional;
  if (!folder || extra.length > 0) throw new UsageError(USAGE);
  const dir = path.resolve(folder);
  if (!fs.existsSync(path.join(dir, 'hangar.json'))) throw new UsageError(`${dir} has no hangar.json: ${USAGE}`);
  const credentials = loadCredentials(ctx.env);
  const target = { baseUrl: credentials.url, apiKey: credentials.apiKey, workspace: credentials.workspace };
  let result: { status?: string; metadata?: { url?: string } };
  try {
    result = await deployFolder(dir, target, { name: args.options.get('name'), log: (line) => ctx.out(`${line}\n`) });
  } catch (err) {
    throw new CommandError(`deploy failed: ${(err as Error).message}`);
  }
  ctx.out(`${result.status ?? 'UNKNOWN'}: ${result.metadata?.url ?? ''}\n`);
  return result.status === 'DEPLOYED' ? 0 : 1;
}
