import { choice, parseArgs } from './args';
import { call } from './client';
import type { CommandContext } from './context';
import { loadCredentials } from './credentials';
import { UsageError } from './errors';
import { findKind } from './kinds';
import { OUTPUTS, renderItem, renderItems } from './output';

type Item = Record<string, unknown>;

/** A list answer as an array, whether the API sent a bare array or a `{data: [...]}` page. */
function asItems(body: unknown): Item[] {
  if (Array.isArray(body)) return body as Item[];
  const data = (body as { data?: unknown } | null)?.data;
  return Array.isArray(data) ? (data as Item[]) : [];
}

/** `hangar list <kind>` and `hangar get <kind> [name]` (get without a name lists). */
export async function getOrList(ctx: CommandContext, verb: 'get' | 'list'): Promise<number> {
  const args = parseArgs(ctx.argv, ['output']);
  const output = choice(args, 'output', OUTPUTS, 'table');
  const [kindWord, name, ...extra] = args.positional;
  const kind = findKind(kindWord);
  if (extra.length > 0 || (verb === 'list' && name)) throw new UsageError(`usage: hangar ${verb} <kind>${verb === 'get' ? ' [name]' : ''} [--output table|json]`);
  const credentials = loadCredentials(ctx.env);
  if (name) {
    ctx.out(`${renderItem(await call<Item>(credentials, 'GET', `/v0/${kind.path}/${encodeURIComponent(name)}`), output)}\n`);
    return 0;
  }
  ctx.out(`${renderItems(asItems(await call(credentials, 'GET', `/v0/${kind.path}`)), output)}\n`);
  return 0;
}

/** `hangar delete <kind> <name>`. */
export async function remove(ctx: CommandContext): Promise<number> {
  const args = parseArgs(ctx.argv, ['output']);
  const output = choice(args, 'output', OUTPUTS, 'table');
  const [kindWord, name, ...extra] = args.positional;
  const kind = findKind(kindWord);
  if (kind.listOnly) throw new UsageError(`${kind.name} can only be listed`);
  if (!name || extra.length > 0) throw new UsageError('usage: hangar delete <kind> <name> [--output table|json]');
  const deleted = await call<Item>(loadCredentials(ctx.env), 'DELETE', `/v0/${kind.path}/${encodeURIComponent(name)}`);
  ctx.out(output === 'json' ? `${JSON.stringify(deleted, null, 2)}\n` : `deleted ${kind.name}/${name}\n`);
  return 0;
}
