import http from 'node:http';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { buildSandboxGatewayApp } from '../../api/gateway/sandbox-app';
import { listenerPath } from '../../domain/nodes/listener-paths';
import { nodeCredentialKey, NODE_CREDENTIAL_HEADER, signNodeRequest } from '../../domain/nodes/node-credential';
import { formatTable } from '../../domain/text-table';
import { loadMasterKey } from '../../store/master-key';
import { startSecondNode, type SecondNode } from '../../test/helpers/second-node';
import { benchConfig, startBenchPlatform, type BenchPlatform } from '../common/platform';
import { percentile } from '../common/stats';

/**
 * The cost of reaching a sandbox on another node (run after a build: `node dist/bench/nodes/remote-gateway.js`).
 * The second node is the real node worker in a network namespace of this machine
 * (test/helpers/second-node.ts), so "remote" adds a veth hop and the listener, not a wire:
 *   - gateway overhead: GET {sandbox_url}/health through the sandbox gateway to a sandbox on this
 *     node (Unix socket) and to one on the second node (its listener, a signed credential per
 *     request), alternating in rounds; the target is remote p50 <= local p50 + 0.5 ms. Floors: the
 *     agent's socket directly, and the listener directly with a credential;
 *   - create -> first exec: POST /v0/sandboxes, then at once POST {sandbox_url}/process (held by
 *     the gateway while the sandbox starts) with waitForCompletion, alternating local and remote,
 *     both nodes without warm sandboxes; the target is remote/local <= 1.2 at the median.
 * Options (environment): BENCH_RUNS (2000 requests per path), BENCH_CREATES (6 per node).
 */
const RUNS = Number(process.env.BENCH_RUNS ?? 2_000);
const CREATES = Number(process.env.BENCH_CREATES ?? 6);
const ROUNDS = 10;
const log = (line: string) => console.log(line);

type Target = { host?: string; port?: number; socketPath?: string; path: string; headers: () => Record<string, string> };

/** p50 samples of sequential keep-alive GETs to each target, in rounds alternating between them. */
async function measure(targets: Record<string, Target>): Promise<Record<string, number[]>> {
  const agents = Object.fromEntries(Object.keys(targets).map((name) => [name, new http.Agent({ keepAlive: true, maxSockets: 1 })]));
  const once = (name: string) =>
    new Promise<number>((resolve, reject) => {
      const { headers, ...target } = targets[name];
      const began = performance.now();
      const req = http.request({ ...target, headers: headers(), agent: agents[name], method: 'GET' }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - began) : reject(new Error(`${name}: ${target.path} answered ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end();
    });
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(targets).map((name) => [name, []]));
  try {
    for (const name of Object.keys(targets)) for (let i = 0; i < 100; i++) await once(name);
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of Object.keys(targets)) for (let i = 0; i < RUNS / ROUNDS; i++) samples[name].push(await once(name));
    }
    return samples;
  } finally {
    for (const agent of Object.values(agents)) agent.destroy();
  }
}

interface Nodes {
  platform: BenchPlatform;
  second: SecondNode;
  /** The management API as configured on the second node: its creations run on that node's queue. */
  remoteApi: FastifyInstance;
  gateway: FastifyInstance;
  gatewayPort: number;
}

const adminHeaders = (platform: BenchPlatform) => ({ authorization: `Bearer ${platform.credentials.apiKey}`, 'x-service-workspace': platform.credentials.workspace });

/** Creates a sandbox through `api`, on the second node when `remote` (recorded on its row at once); its id and URL. */
async function create(nodes: Nodes, api: FastifyInstance, name: string, remote: boolean): Promise<{ id: string; url: URL }> {
  const { platform, second } = nodes;
  const created = await api.inject({ method: 'POST', url: '/v0/sandboxes', headers: adminHeaders(platform), payload: { metadata: { name }, spec: { runtime: { memory: 256 } } } });
  if (created.statusCode !== 200) throw new Error(`create ${name}: ${created.statusCode} ${created.body}`);
  const { rows } = await platform.pg.query<{ id: string }>("SELECT id FROM resources WHERE kind = 'sandboxes' AND name = $1", [name]);
  if (remote) await platform.pg.query('UPDATE resources SET node_id = $2 WHERE id = $1', [rows[0].id, second.id]);
  return { id: rows[0].id, url: new URL(created.json().metadata.url) };
}

/** POST {sandbox_url}/process through the gateway (held while the sandbox starts), waiting for the command. */
async function firstExec(nodes: Nodes, url: URL): Promise<void> {
  const answer = await nodes.gateway.inject({
    method: 'POST',
    url: `${url.pathname}/process`,
    headers: { host: url.host, authorization: `Bearer ${nodes.platform.credentials.apiKey}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ command: 'true', waitForCompletion: true }),
  });
  if (answer.statusCode !== 200) throw new Error(`first exec: ${answer.statusCode} ${answer.body}`);
}

async function gatewayOverhead(nodes: Nodes): Promise<string[][]> {
  const { platform, second, gatewayPort } = nodes;
  const local = await create(nodes, platform.app, `rg-local-${Date.now().toString(36)}`, false);
  const remote = await create(nodes, nodes.remoteApi, `rg-remote-${Date.now().toString(36)}`, true);
  await firstExec(nodes, local.url);
  await firstExec(nodes, remote.url);
  const key = nodeCredentialKey(loadMasterKey(platform.config));
  const listener = listenerPath({ kind: 'sandbox-api', sandboxId: remote.id, rest: '/health' });
  const viaGateway = (url: URL): Target => ({ host: '127.0.0.1', port: gatewayPort, path: `${url.pathname}/health`, headers: () => ({ host: url.host, authorization: `Bearer ${platform.credentials.apiKey}` }) });
  const s = await measure({
    localFloor: { socketPath: platform.runtime.socketPath(local.id), path: '/health', headers: () => ({}) },
    remoteFloor: { host: second.address, port: second.listenPort, path: listener, headers: () => ({ [NODE_CREDENTIAL_HEADER]: signNodeRequest(key, second.id, 'GET', listener) }) },
    local: viaGateway(local.url),
    remote: viaGateway(remote.url),
  });
  const p50 = (name: string) => percentile(s[name], 50);
  const row = (what: string, name: string, floor: string) => [what, p50(name).toFixed(3), percentile(s[name], 95).toFixed(3), p50(floor).toFixed(3), `+${(p50(name) - p50(floor)).toFixed(3)}`];
  return [
    row('gateway -> sandbox on this node (Unix socket)', 'local', 'localFloor'),
    row("gateway -> sandbox on the second node (listener)", 'remote', 'remoteFloor'),
    ['remote - local at p50 (target +0.5)', `+${(p50('remote') - p50('local')).toFixed(3)}`, '', '', ''],
    ["for scale: the listener alone vs the agent's socket alone", '', '', '', `+${(p50('remoteFloor') - p50('localFloor')).toFixed(3)}`],
  ];
}

async function createToExec(nodes: Nodes): Promise<string[][]> {
  const times: Record<'local' | 'remote', number[]> = { local: [], remote: [] };
  for (let i = 0; i < CREATES; i++) {
    for (const where of i % 2 === 0 ? (['local', 'remote'] as const) : (['remote', 'local'] as const)) {
      const began = performance.now();
      const { url } = await create(nodes, where === 'local' ? nodes.platform.app : nodes.remoteApi, `rg-c-${where}-${i}-${Date.now().toString(36)}`, where === 'remote');
      await firstExec(nodes, url);
      times[where].push(performance.now() - began);
    }
  }
  const local = percentile(times.local, 50);
  const remote = percentile(times.remote, 50);
  return [
    ['create -> first exec, this node', local.toFixed(1), percentile(times.local, 95).toFixed(1), ''],
    ['create -> first exec, second node', remote.toFixed(1), percentile(times.remote, 95).toFixed(1), `${(remote / local).toFixed(2)}x (target <= 1.2x)`],
  ];
}

async function main() {
  // A short name: sandbox socket paths (<data folder>/sandboxes/<uuid>/api/agent.sock) must fit in 107 bytes.
  const platform = await startBenchPlatform(benchConfig('remote-gw', 56960, { HANGAR_SANDBOX_WARM_POOL: '0' }), log);
  let second: SecondNode | undefined;
  let remoteApi: FastifyInstance | undefined;
  let gateway: FastifyInstance | undefined;
  try {
    second = await startSecondNode(platform.config, platform.pg);
    remoteApi = await buildApp({ ...platform.config, nodeId: second.id });
    await remoteApi.ready();
    gateway = await buildSandboxGatewayApp(platform.config, platform.runtime);
    await gateway.listen({ host: '127.0.0.1', port: 0 });
    const nodes: Nodes = { platform, second, remoteApi, gateway, gatewayPort: (gateway.server.address() as { port: number }).port };
    log('\n' + formatTable(['GET {sandbox_url}/health', 'p50 ms', 'p95 ms', 'floor p50 ms', 'over floor'], await gatewayOverhead(nodes)));
    log(`${RUNS} sequential keep-alive requests per path, in ${ROUNDS} rounds alternating between the paths`);
    log('\n' + formatTable(['sandbox create -> first exec', 'p50 ms', 'p95 ms', 'remote / local'], await createToExec(nodes)));
    log(`${CREATES} creations per node, alternating; no warm sandboxes on either node`);
  } finally {
    await gateway?.close();
    await remoteApi?.close();
    await second?.stop();
    await platform.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
