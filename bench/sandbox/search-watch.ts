import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { BwrapRuntime } from '../../runtime/bwrap-runtime';
import { searchWithNode, searchWithRipgrep } from '../../sandbox-agent/content-search';
import { DEFAULT_EXCLUDED_DIRS } from '../../sandbox-agent/file-walk';
import { repoRoot } from '../../scripts/stack/binaries';
import { percentile } from '../common/stats';

/**
 * Watch and content search of the sandbox API (run by hand after a build, as root:
 * `node dist/bench/sandbox/search-watch.js`), each beside its floor measured in the same run:
 *  - watch: a file written (on the host, into the sandbox's /workspace) -> its CREATE event read
 *    from GET /watch/filesystem/..., against a bare fs.watch of the same folder on the host;
 *  - content search over a tree of 50,000 files: GET /filesystem-content-search (ripgrep in the
 *    sandbox, every match, case-sensitive) against `grep -rn` of the same tree on the host; the
 *    same ripgrep run on the host and the Node search the agent falls back to without ripgrep
 *    are shown too.
 * Both talk to the agent over its socket (the gateway in front adds its own, measured elsewhere).
 * Options (environment): BENCH_RUNS (50 watch writes; 5 searches each way), BENCH_FILES (50000),
 * HANGAR_AGENT_DIR (the compiled agent, default dist/sandbox-agent).
 */
const env = process.env;
const WATCH_RUNS = Number(env.BENCH_RUNS ?? 50);
const SEARCH_RUNS = Math.max(5, Math.round(WATCH_RUNS / 5));
const FILES = Number(env.BENCH_FILES ?? 50_000);
const FILES_PER_DIR = 200;
const NEEDLE = 'needle-token';

const log = (line: string) => process.stdout.write(`${line}\n`);
const dataDir = path.join(repoRoot(), '.data-bench', `search-watch-${process.pid}`);

const now = () => performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** GET over the agent's socket, the whole body. */
function get(socketPath: string, url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ socketPath, path: url }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

/** A watch stream over the agent's socket: calls `line` with each line; resolves once the first keepalive says it is in place. */
function openWatch(socketPath: string, url: string, line: (text: string) => void): Promise<http.ClientRequest> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path: url }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`watch: ${res.statusCode}`));
      let buffer = '';
      res.setEncoding('utf8').on('data', (chunk: string) => {
        buffer += chunk;
        const lines = buffer.split('\n');
        buffer = lines.pop()!;
        for (const text of lines) {
          if (text === '[keepalive]') resolve(req);
          else line(text);
        }
      });
    });
    req.on('error', reject);
  });
}

/** Write -> event, through the agent's watch and through a bare fs.watch on the host, per write. */
async function watchLatency(socketPath: string, hostDir: string): Promise<{ agent: number[]; floor: number[] }> {
  const waiting = new Map<string, { agent?: (t: number) => void; floor?: (t: number) => void }>();
  const stream = await openWatch(socketPath, '/watch/filesystem/workspace/watched', (text) => {
    const event = JSON.parse(text) as { op: string; name: string };
    if (event.op === 'CREATE') waiting.get(event.name)?.agent?.(now());
  });
  const bare = fs.watch(hostDir, (type, name) => {
    if (type === 'rename' && name) waiting.get(name.toString())?.floor?.(now());
  });
  const agent: number[] = [];
  const floor: number[] = [];
  try {
    for (let i = 0; i < WATCH_RUNS; i++) {
      const name = `f-${i}`;
      const waiter = {} as { agent?: (t: number) => void; floor?: (t: number) => void };
      const seenByAgent = new Promise<number>((resolve) => (waiter.agent = resolve));
      const seenByFloor = new Promise<number>((resolve) => (waiter.floor = resolve));
      waiting.set(name, waiter);
      const began = now();
      fs.writeFileSync(path.join(hostDir, name), 'x');
      const [agentAt, floorAt] = await Promise.all([seenByAgent, seenByFloor]);
      agent.push(agentAt - began);
      floor.push(floorAt - began);
      waiting.delete(name);
      await sleep(10);
    }
  } finally {
    bare.close();
    stream.destroy();
  }
  return { agent, floor };
}

/** FILES small text files in folders of FILES_PER_DIR; one file in 20 holds the needle once. */
function makeTree(root: string): number {
  let needles = 0;
  for (let i = 0; i < FILES; i++) {
    const dir = path.join(root, `d${String(Math.floor(i / FILES_PER_DIR)).padStart(4, '0')}`);
    if (i % FILES_PER_DIR === 0) fs.mkdirSync(dir, { recursive: true });
    const lines = Array.from({ length: 12 }, (_, n) => `line ${n} of file ${i}: some ordinary source text, nothing to see here`);
    if (i % 20 === 0) {
      lines[5] = `const found = "${NEEDLE}"; // file ${i}`;
      needles++;
    }
    fs.writeFileSync(path.join(dir, `file-${i}.txt`), `${lines.join('\n')}\n`);
  }
  return needles;
}

const grep = (dir: string) =>
  new Promise<number>((resolve, reject) =>
    execFile('grep', ['-rn', NEEDLE, dir], { maxBuffer: 1 << 30 }, (err, stdout) => (err ? reject(err) : resolve(stdout.split('\n').length - 1))),
  );

/** Each way once per round, in turn, so that the machine's load weighs on all alike. */
async function interleaved<K extends string>(runs: number, ways: Record<K, () => Promise<number>>, expected: number): Promise<Record<K, number[]>> {
  const names = Object.keys(ways) as K[];
  const samples = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<K, number[]>;
  for (let i = 0; i < runs; i++) {
    for (const name of names) {
      const work = ways[name];
      const began = now();
      const found = await work();
      samples[name].push(now() - began);
      if (found !== expected) throw new Error(`${name}: found ${found} matches, expected ${expected}`);
    }
  }
  return samples;
}

async function searchTimes(socketPath: string, hostTree: string, needles: number) {
  const viaAgent = async () => {
    const res = await get(socketPath, `/filesystem-content-search/workspace/tree?query=${NEEDLE}&caseSensitive=true&maxResults=0`);
    if (res.status !== 200) throw new Error(`content search: ${res.status} ${res.body}`);
    return (JSON.parse(res.body) as { total: number }).total;
  };
  const query = { text: NEEDLE, caseSensitive: true, contextLines: 0, maxResults: Infinity, excludeDirs: DEFAULT_EXCLUDED_DIRS };
  const scope = { root: hostTree, hiddenRoots: [] };
  const rgOnHost = async () => (await searchWithRipgrep('/usr/bin/rg', { PATH: '/usr/bin:/bin' }, scope, query))!.length;
  // Once each first: the page cache and the agent warm, outside the timings.
  await viaAgent();
  await grep(hostTree);
  const timed = await interleaved(SEARCH_RUNS, { grep: () => grep(hostTree), agent: viaAgent, rgOnHost }, needles);
  return { ...timed, node: (await interleaved(3, { node: async () => (await searchWithNode(scope, query)).length }, needles)).node };
}

function row(what: string, samples: number[], floorName: string, floor: number[], target: string): string {
  const p50 = percentile(samples, 50);
  const floorP50 = percentile(floor, 50);
  const ms = (n: number) => n.toFixed(2).padStart(9);
  return `${what.padEnd(46)} ${ms(p50)} ${ms(percentile(samples, 95))}   ${floorName.padEnd(34)} ${ms(floorP50)}   ${`${(p50 / floorP50).toFixed(2)}x`.padStart(7)}   ${target}`;
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('the sandbox benchmark runs as root (bubblewrap and cgroups)');
  const runtime = new BwrapRuntime({ dataDir, agentDir: env.HANGAR_AGENT_DIR });
  const id = `bench-search-${process.pid}`;
  try {
    const handle = await runtime.start({ id, workspaceId: 'bench', image: 'base', memoryMb: 1024, envs: [], volumes: [] });
    const workspace = runtime.layout(id).writable.find((folder) => folder.sandboxPath === '/workspace')!.hostPath;
    const watched = path.join(workspace, 'watched');
    fs.mkdirSync(watched);
    log(`search and watch benchmark: ${WATCH_RUNS} watched writes, ${FILES} files searched ${SEARCH_RUNS} times each way, data in ${dataDir}`);
    const watch = await watchLatency(handle.socketPath, watched);

    const tree = path.join(workspace, 'tree');
    const needles = makeTree(tree);
    const search = await searchTimes(handle.socketPath, tree, needles);

    log(`${'measure (ms)'.padEnd(46)} ${'p50'.padStart(9)} ${'p95'.padStart(9)}   ${'floor'.padEnd(34)} ${'p50'.padStart(9)}   ${'ratio'.padStart(7)}   target`);
    log(row('watch: write -> CREATE event delivered', watch.agent, 'bare fs.watch on the host', watch.floor, 'p50 <= 20 ms'));
    log(row(`content search, ${FILES} files (${needles} hits)`, search.agent, '`grep -rn` on the host', search.grep, '<= 1.5x'));
    log(row('  the same ripgrep run on the host, no API', search.rgOnHost, '`grep -rn` on the host', search.grep, '(where the time goes)'));
    log(row('  the Node search (images without ripgrep)', search.node, '`grep -rn` on the host', search.grep, '(fallback)'));
  } finally {
    await runtime.remove(id).catch(() => undefined);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(`search and watch benchmark failed: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
