import { formatTable } from '../../domain/text-table';
import { choice, parseArgs } from './args';
import { call } from './client';
import type { CommandContext } from './context';
import { loadCredentials } from './credentials';
import { UsageError } from './errors';
import { OUTPUTS } from './output';

const USAGE = 'usage: hangar node list | drain <node id> | undrain <node id> [--output table|json]';
const GiB = 1024 ** 3;

/** A node as GET /v0/nodes answers it (the fields the table shows). */
interface ApiNode {
  id: string;
  state: string;
  drained: boolean;
  region: string;
  capacity: { memoryBytes: number; cpus: number };
  load: { sandboxes: number; memoryFreeBytes: number; diskFreeBytes: number };
  lastHeartbeatAt: string;
}

const gib = (bytes: number) => (bytes / GiB).toFixed(1);

export function nodeTable(nodes: ApiNode[]): string {
  const rows = nodes.map((node) => [
    node.id,
    node.state + (node.drained ? ' (drained)' : ''),
    node.region,
    String(node.load.sandboxes),
    `${gib(node.load.memoryFreeBytes)} / ${gib(node.capacity.memoryBytes)} GiB`,
    String(node.capacity.cpus),
    `${gib(node.load.diskFreeBytes)} GiB`,
    node.lastHeartbeatAt,
  ]);
  return formatTable(['NODE', 'STATE', 'REGION', 'SANDBOXES', 'MEMORY FREE', 'CPUS', 'DISK FREE', 'LAST HEARD'], rows);
}

/**
 * `hangar node list | drain <id> | undrain <id>`: the operator's view of the runtime nodes and
 * their drain switch, through the API (GET /v0/nodes, POST /v0/nodes/{id}/drain|undrain), which
 * answers account admins only; anyone else gets the API's 403 as exit 1.
 */
export async function node(ctx: CommandContext): Promise<number> {
  const args = parseArgs(ctx.argv, ['output']);
  const output = choice(args, 'output', OUTPUTS, 'table');
  const [verb, nodeId, ...extra] = args.positional;
  const wantsId = verb === 'drain' || verb === 'undrain';
  if (!['list', 'drain', 'undrain'].includes(verb ?? '') || (wantsId ? !nodeId || extra.length > 0 : args.positional.length > 1)) throw new UsageError(USAGE);
  const credentials = loadCredentials(ctx.env);
  if (!wantsId) {
    const nodes = await call<ApiNode[]>(credentials, 'GET', '/v0/nodes');
    ctx.out(`${output === 'json' ? JSON.stringify(nodes, null, 2) : nodeTable(nodes)}\n`);
    return 0;
  }
  const changed = await call<ApiNode>(credentials, 'POST', `/v0/nodes/${encodeURIComponent(nodeId)}/${verb}`);
  if (output === 'json') ctx.out(`${JSON.stringify(changed, null, 2)}\n`);
  else ctx.out(`node '${nodeId}' ${verb === 'drain' ? 'drained: nothing new is placed on it; what it runs stays' : 'takes new work again'}\n`);
  return 0;
}
