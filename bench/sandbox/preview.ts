import http from 'node:http';
import type { FastifyInstance } from 'fastify';
import { buildSandboxGatewayApp } from '../../api/gateway/sandbox-app';
import { formatTable } from '../../domain/text-table';
import { SandboxAgentClient } from '../../runtime/agent-client';
import { sandboxLayout } from '../../runtime/layout';
import { benchConfig, createBenchSandbox, startBenchPlatform, type BenchPlatform } from '../common/platform';
import { percentile } from '../common/stats';

/**
 * Preview overhead (run after a build: `node dist/bench/sandbox/preview.js`, as root): one GET at
 * a time to a small HTTP server inside a sandbox, through
 *  - a public preview URL, and a private one with its token in the header (the preview host);
 *  - the baseline: the sandbox gateway's fastest path to the same server (`baselinePath`, the one
 *    function to swap: `{sandbox_url}/port/{port}` once the gateway has it, else nothing);
 *  - the floor: the port's own forwarded socket on the host, no gateway at all;
 *  - for scale, the gateway's existing path to the sandbox API (`/health`) over the agent's socket.
 * Each row prints p50/p95, the floor's p50 and the milliseconds added over it (and over the
 * baseline, whose target is +0.5 ms at p50). Options: BENCH_RUNS (2000), BENCH_WARMUP (200).
 */
const RUNS = Number(process.env.BENCH_RUNS ?? 2_000);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 200);
const PORT = 8000;
const SERVER = `require('http').createServer((q, s) => s.end('ok')).listen(${PORT}, '0.0.0.0')`;

const log = (line: string) => console.log(line);

/** Where a request goes: TCP to a listener (with headers) or a Unix socket. */
type Target = { host: string; port: number; path: string; headers: Record<string, string> } | { socketPath: string; path: string; headers: Record<string, string> };

/** Sequential GETs over one keep-alive connection each; rounds alternate between the targets so none is favoured by when it runs. */
async function measure(targets: Record<string, Target>, rounds = 10): Promise<Record<string, number[]>> {
  const agents = Object.fromEntries(Object.keys(targets).map((name) => [name, new http.Agent({ keepAlive: true, maxSockets: 1 })]));
  const once = (name: string) =>
    new Promise<number>((resolve, reject) => {
      const target = targets[name];
      const began = performance.now();
      const req = http.request({ ...target, agent: agents[name], method: 'GET' }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - began) : reject(new Error(`${target.path} answered ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end();
    });
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(targets).map((name) => [name, []]));
  try {
    for (const name of Object.keys(targets)) for (let i = 0; i < WARMUP; i++) await once(name);
    for (let round = 0; round < rounds; round++) {
      for (const name of Object.keys(targets)) for (let i = 0; i < RUNS / rounds; i++) samples[name].push(await once(name));
    }
    return samples;
  } finally {
    for (const agent of Object.values(agents)) agent.destroy();
  }
}

/** A management call on the in-process app; its JSON answer, or a throw. */
async function manage(platform: BenchPlatform, method: 'POST' | 'GET', url: string, payload?: unknown): Promise<any> {
  const headers = { authorization: `Bearer ${platform.credentials.apiKey}`, 'x-service-workspace': platform.credentials.workspace };
  const res = await platform.app.inject({ method, url, headers, payload: payload as object });
  if (res.statusCode !== 200) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.json();
}

/** A sandbox that runs the server, with its id and its URL. */
async function sandboxWithServer(platform: BenchPlatform, gateway: FastifyInstance, name: string): Promise<{ id: string; url: URL }> {
  const { url, resourceId } = await createBenchSandbox(platform, name, 256);
  const headers = { host: url.host, authorization: `Bearer ${platform.credentials.apiKey}`, 'content-type': 'application/json' };
  const started = await gateway.inject({ method: 'POST', url: `${url.pathname}/process`, headers, payload: JSON.stringify({ name: 'server', command: `node -e "${SERVER}"`, waitForPorts: [PORT] }) });
  if (started.statusCode !== 200) throw new Error(`server: ${started.statusCode} ${started.body}`);
  return { id: resourceId, url };
}

/**
 * The baseline: the sandbox gateway's fastest existing path to the server on PORT, as a path on
 * the gateway, or undefined when it has none. Swap this one function when that path changes.
 */
async function baselinePath(sandboxUrl: URL, probe: (path: string) => Promise<number>): Promise<string | undefined> {
  const path = `${sandboxUrl.pathname}/port/${PORT}/`;
  return (await probe(path)) === 200 ? path : undefined;
}

function row(what: string, samples: number[] | undefined, floor: number[], baseline?: number[]): string[] {
  if (!samples) return [what, 'n/a', 'n/a', '', '', ''];
  const p50 = percentile(samples, 50);
  const overFloor = p50 - percentile(floor, 50);
  const overBaseline = baseline ? `+${(p50 - percentile(baseline, 50)).toFixed(2)}` : '';
  return [what, p50.toFixed(2), percentile(samples, 95).toFixed(2), percentile(floor, 50).toFixed(2), `+${overFloor.toFixed(2)}`, overBaseline];
}

async function main() {
  const platform = await startBenchPlatform(benchConfig('sandbox-preview', 56840), log);
  const { config, runtime } = platform;
  const gateway = await buildSandboxGatewayApp(config, runtime);
  try {
    await gateway.listen({ host: config.host, port: config.sandboxPort });
    const { id, url } = await sandboxWithServer(platform, gateway, `bench-preview-${Date.now().toString(36)}`);
    const sandboxName = url.pathname.split('/').pop();
    const publicPreview = await manage(platform, 'POST', `/v0/sandboxes/${sandboxName}/previews`, { metadata: { name: 'public' }, spec: { port: PORT, public: true } });
    const privatePreview = await manage(platform, 'POST', `/v0/sandboxes/${sandboxName}/previews`, { metadata: { name: 'private' }, spec: { port: PORT, public: false } });
    const token = await manage(platform, 'POST', `/v0/sandboxes/${sandboxName}/previews/private/tokens`, { spec: { expiresAt: new Date(Date.now() + 3_600_000).toISOString() } });

    // The floor: the agent's forwarder for the port, reached directly on the host.
    const forward = await new SandboxAgentClient(runtime.socketPath(id)).forwardPort(PORT);
    const portSocket = `${sandboxLayout(config.dataDir, id).runDir}/${forward.socketPath.split('/').pop()}`;
    const viaGateway = (path: string, headers: Record<string, string> = {}): Target => ({ host: config.host, port: config.sandboxPort, path, headers });
    const apiKey = { authorization: `Bearer ${platform.credentials.apiKey}` };
    const probe = async (path: string) => (await gateway.inject({ method: 'GET', url: path, headers: { host: url.host, ...apiKey } })).statusCode;

    const basePath = await baselinePath(url, probe);
    const targets: Record<string, Target> = {
      floor: { socketPath: portSocket, path: '/', headers: {} },
      public: viaGateway(`${new URL(publicPreview.spec.url).pathname}/`),
      private: viaGateway(`${new URL(privatePreview.spec.url).pathname}/`, { 'x-service-preview-token': token.spec.token }),
      // For scale: what the sandbox gateway adds on its existing path, to the sandbox API over its own floor.
      apiFloor: { socketPath: runtime.socketPath(id), path: '/health', headers: {} },
      api: viaGateway(`${url.pathname}/health`, apiKey),
      ...(basePath ? { baseline: viaGateway(basePath, apiKey) } : {}),
    };
    const { floor, baseline, public: publicSamples, private: privateSamples, apiFloor, api: apiSamples } = await measure(targets);
    log(
      '\n' +
        formatTable(
          ['GET to a server in a sandbox', 'p50 ms', 'p95 ms', 'floor p50 ms', 'added over floor', 'added over baseline (target +0.5)'],
          [
            row(`baseline: ${basePath ? '{sandbox_url}/port/{port}' : '{sandbox_url}/port/{port} (not in this build)'}`, baseline, floor),
            row('preview, public', publicSamples, floor, baseline),
            row('preview, private (token header)', privateSamples, floor, baseline),
            row('for scale: {sandbox_url}/health (API key), floor the agent socket', apiSamples, apiFloor),
          ],
        ) +
        `\nfloor: the port's forwarded socket on the host, no gateway; ${RUNS} sequential requests each, keep-alive, in rounds alternating between the paths`,
    );
  } finally {
    await gateway.close();
    await platform.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
