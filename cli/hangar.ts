#!/usr/bin/env node
import { apply } from './hangar/apply';
import { billing } from './hangar/billing';
import { deploy } from './hangar/deploy';
import type { CommandContext } from './hangar/context';
import { CommandError, UsageError } from './hangar/errors';
import { login } from './hangar/login';
import { logs } from './hangar/logs';
import { node } from './hangar/node';
import { getOrList, remove } from './hangar/resources';
import { sandbox } from './hangar/sandbox';

/**
 * `hangar`: the platform's CLI, against its HTTP API. Exit codes scripts rely on: 0 done, 1 an
 * error of the API or of a resource (with the API's message), 2 a usage mistake.
 */

const USAGE = `usage: hangar <command>
  login --url <base_url> --api-key <key> [--workspace <name>]
  list <kind> [--output table|json]
  get <kind> [name] [--output table|json]
  delete <kind> <name>
  apply -f <file.yaml> [--output table|json]
  deploy <folder with hangar.json> [--name <name>] [--output table|json] [--timeout <seconds>]
  sandbox exec <name> -- <command...>
  sandbox shell <name>
  sandbox cp <src> <dst>   (one of them <sandbox>:/path; files and directories)
  logs sandboxes <name> <process>
  billing [--since 7d] [--group-by resource_name,billing_dimension] [--output table|json|csv]
  node list | drain <node id> | undrain <node id>   (account admins)
kinds: sandboxes, agents, functions, models, jobs, volumes, images, snapshots, customdomains, connections, nodes (list only)`;

type Command = (ctx: CommandContext) => Promise<number>;

const COMMANDS: Record<string, Command> = {
  login,
  list: (ctx) => getOrList(ctx, 'list'),
  get: (ctx) => getOrList(ctx, 'get'),
  delete: remove,
  apply,
  deploy,
  sandbox,
  logs,
  billing,
  node,
};

export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const err = (text: string) => process.stderr.write(text);
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    (name === undefined ? err : (text: string) => process.stdout.write(text))(`${USAGE}\n`);
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  try {
    if (!command) throw new UsageError(`unknown command '${name}'\n${USAGE}`);
    return await command({ argv: rest, env, out: (text) => process.stdout.write(text), err, errIsTty: process.stderr.isTTY, columns: process.stderr.columns });
  } catch (error) {
    if (error instanceof UsageError || error instanceof CommandError) {
      err(`hangar: ${error.message}\n`);
      return error.exitCode;
    }
    err(`hangar: ${(error as Error).message}\n`);
    return 1;
  }
}

if (require.main === module) {
  // exitCode rather than exit(): stdout is flushed before the process ends, even into a pipe.
  void main(process.argv.slice(2)).then((status) => {
    process.exitCode = status;
  });
}
