import { loadConfig } from '../domain/config';
import { freeMemoryBytes, nodeState } from '../domain/nodes/node';
import { formatTable } from '../domain/text-table';
import { createPool } from '../store/postgres-pool';
import { listNodes, nodeFigures, setNodeDrained, type NodeRow } from '../store/nodes';
import { serviceEndpoints } from './billing-check';

/**
 * `npm run -s nodes -- list | drain <node id> | undrain <node id>`: the operator's view of the
 * runtime nodes and their drain switch. It works on the platform's database (DATABASE_URL, or the
 * local stack's), as an operator does, rather than through an account's API key: a node serves
 * every account. Exit codes: 0 done, 1 no such node, 2 a usage mistake.
 */

const USAGE = 'usage: npm run -s nodes -- list | drain <node id> | undrain <node id>';
const GiB = 1024 ** 3;

function nodeTable(rows: NodeRow[], lostAfterSeconds: number): string {
  const table = rows.map((row) => {
    const { capacity, load } = nodeFigures(row);
    return [
      row.id,
      nodeState(row.silent_seconds, lostAfterSeconds) + (row.drained_at ? ' (drained)' : ''),
      row.region,
      String(row.sandboxes),
      `${(freeMemoryBytes(capacity, load) / GiB).toFixed(1)} / ${(capacity.memoryBytes / GiB).toFixed(1)} GiB`,
      String(row.cpus),
      `${(load.diskFreeBytes / GiB).toFixed(1)} GiB`,
      `${Math.round(row.silent_seconds)} s ago`,
    ];
  });
  return formatTable(['node', 'state', 'region', 'sandboxes', 'memory free', 'cpus', 'disk free', 'last heard'], table);
}

export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env, write: (text: string) => void = (text) => process.stdout.write(text)): Promise<number> {
  const [command, nodeId, ...rest] = argv;
  const wantsId = command === 'drain' || command === 'undrain';
  if (!['list', 'drain', 'undrain'].includes(command ?? '') || (wantsId ? !nodeId || rest.length > 0 : argv.length > 1)) {
    write(`${USAGE}\n`);
    return 2;
  }
  const config = serviceEndpoints(loadConfig(env));
  const pg = createPool(config.databaseUrl, 1);
  try {
    if (!wantsId) {
      write(`${nodeTable(await listNodes(pg), config.nodeLostSeconds)}\n`);
      return 0;
    }
    const row = await setNodeDrained(pg, nodeId, command === 'drain');
    if (!row) {
      write(`no node '${nodeId}': see npm run -s nodes -- list\n`);
      return 1;
    }
    write(`node '${nodeId}' ${command === 'drain' ? 'drained: nothing new is placed on it; what it runs stays' : 'takes new work again'}\n`);
    return 0;
  } finally {
    await pg.end();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (status) => process.exit(status),
    (err) => {
      console.error(`nodes: ${(err as Error).message}`);
      process.exit(2);
    },
  );
}
