import fs from 'node:fs';
import { parseArgs } from './args';
import { apiMessage, request } from './client';
import type { CommandContext } from './context';
import { saveCredentials, type Credentials } from './credentials';
import { CommandError, UsageError } from './errors';

const USAGE = 'usage: hangar login --url <base_url> --api-key <key|-> [--workspace <name>] (or HANGAR_URL, HANGAR_API_KEY, HANGAR_WORKSPACE)';

/**
 * `hangar login`: checks the key against the API (the workspace it names must answer) before
 * storing anything, so a wrong key or workspace never ends up in the file. The key is not printed.
 */
export async function login(ctx: CommandContext): Promise<number> {
  const args = parseArgs(ctx.argv, ['url', 'api-key', 'workspace']);
  if (args.positional.length > 0) throw new UsageError(USAGE);
  const url = (args.options.get('url') ?? ctx.env.HANGAR_URL ?? '').replace(/\/+$/, '');
  const given = args.options.get('api-key') ?? ctx.env.HANGAR_API_KEY ?? '';
  // `--api-key -` reads the key from stdin, keeping it out of the process list and shell history.
  const apiKey = given === '-' ? fs.readFileSync(0, 'utf8').trim() : given;
  const workspace = args.options.get('workspace') ?? ctx.env.HANGAR_WORKSPACE ?? 'default';
  if (!url) throw new UsageError(`--url is required: ${USAGE}`);
  if (!/^https?:\/\/[^/]+/.test(url)) throw new UsageError(`--url must be an http(s) address such as http://127.0.0.1:8080 (got '${url}')`);
  if (!apiKey) throw new UsageError(`--api-key is required: ${USAGE}`);
  const credentials: Credentials = { url, apiKey, workspace };
  const answer = await request(credentials, 'GET', `/v0/workspaces/${encodeURIComponent(workspace)}`);
  if (answer.status === 401) throw new CommandError(`login refused by ${url}: ${apiMessage(answer)} (check the API key)`);
  if (answer.status === 403 || answer.status === 404) throw new CommandError(`login refused: workspace '${workspace}' is not one of this key's (${apiMessage(answer)}); pass --workspace <name>`);
  if (answer.status !== 200) throw new CommandError(`login failed: ${answer.status} ${apiMessage(answer)}`);
  const file = saveCredentials(ctx.env, credentials);
  ctx.out(`logged in to ${url} (workspace ${workspace}); credentials stored in ${file}\n`);
  return 0;
}
