import fs from 'node:fs';
import path from 'node:path';
import { choice, parseArgs } from './args';
import type { CommandContext } from './context';
import { loadCredentials } from './credentials';
import { deployFolderOutcome } from './deploy-folder';
import { CommandError, UsageError } from './errors';
import { progressPrinter } from './progress';

const USAGE = 'usage: hangar deploy <folder with hangar.json> [--name <name>] [--output table|json] [--timeout <seconds>]';

function timeoutSeconds(text: string | undefined): number {
  if (text === undefined) return 300;
  if (!/^\d+$/.test(text) || Number(text) === 0) throw new UsageError(`--timeout must be a whole number of seconds above 0 (got '${text}')`);
  return Number(text);
}

/**
 * `hangar deploy <folder>`: builds the folder's Dockerfile when it has one, creates or updates the
 * resource, uploads the folder as its next revision and follows it, with progress on stderr (a bar
 * on a terminal, plain lines otherwise). Exit 0 once the revision serves; 1 with the reason when
 * it (or its image build) failed.
 */
export async function deploy(ctx: CommandContext): Promise<number> {
  const args = parseArgs(ctx.argv, ['name', 'output', 'timeout']);
  const output = choice(args, 'output', ['table', 'json'], 'table');
  const timeoutMs = timeoutSeconds(args.options.get('timeout')) * 1000;
  const [folder, ...extra] = args.positional;
  if (!folder || extra.length > 0) throw new UsageError(USAGE);
  const dir = path.resolve(folder);
  if (!fs.existsSync(path.join(dir, 'hangar.json'))) throw new UsageError(`${dir} has no hangar.json: ${USAGE}`);
  const credentials = loadCredentials(ctx.env);
  const printer = progressPrinter(ctx.err, ctx.errIsTty ?? false, ctx.columns);
  const log = (line: string) => printer({ stage: 'deploy', message: line });
  let outcome;
  try {
    outcome = await deployFolderOutcome(dir, credentials, { name: args.options.get('name'), progress: printer, log, timeoutMs });
  } finally {
    printer.done();
  }
  if (output === 'json') ctx.out(`${JSON.stringify(outcome.resource, null, 2)}\n`);
  if (!outcome.deployed) throw new CommandError(`deploy failed: ${outcome.reason}`);
  if (output === 'table') ctx.out(`DEPLOYED: ${outcome.resource.metadata?.url ?? ''}\n`);
  return 0;
}
