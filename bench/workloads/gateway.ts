import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { buildRunApp } from '../../api/gateway/run-app';
import { deployFolder } from '../../cli/deploy';
import { repoRoot } from '../../scripts/stack/binaries';
import { measureInterleaved } from '../common/load';
import { ratios } from '../common/stats';
import { formatTable } from '../common/table';
import { benchConfig, startBenchPlatform } from '../common/platform';

/**
 * Inference gateway benchmark (after a build, as root: `node dist/bench/workloads/gateway.js`).
 *
 * Deploys examples/agent (the echo agent) and sends the same POSTs through the gateway
 * (run_url: auth, route lookup, streaming proxy), through the gateway by a custom domain's Host
 * (domain lookup as well), and straight to the agent's port (its forwarder socket on the host,
 * the closest a host process gets to it), interleaved so all see the same machine load. Prints throughput and p50/p99 of each and their ratio. Targets: gateway
 * throughput >= 0.8 of direct, p50 overhead <= 1 ms. Options: BENCH_REQUESTS (4000),
 * BENCH_CONCURRENCY (16). Own data folder (.data-bench/gateway) and ports.
 */
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const log = (line: string) => process.stdout.write(`${line}\n`);

/** One POST with a small JSON body over a keep-alive agent; rejects on anything but 200. */
function post(agent: http.Agent, target: { socketPath: string } | { host: string; port: number }, urlPath: string, headers: Record<string, string>): Promise<void> {
  const body = '{"inputs":"hello"}';
  return new Promise((resolve, reject) => {
    const req = http.request({ ...target, agent, method: 'POST', path: urlPath, headers: { ...headers, 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`answered ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Creates a custom domain and waits until it routes. */
async function createCustomDomain(baseUrl: string, credentials: { apiKey: string; workspace: string }, body: object): Promise<void> {
  const headers = { authorization: `Bearer ${credentials.apiKey}`, 'x-service-workspace': credentials.workspace, 'content-type': 'application/json' };
  const created = await fetch(`${baseUrl}/v0/customdomains`, { method: 'POST', headers, body: JSON.stringify(body) });
  if (created.status !== 200) throw new Error(`creating the custom domain failed (${created.status}): ${await created.text()}`);
  const { metadata } = (await created.json()) as { metadata: { name: string } };
  for (let attempt = 0; attempt < 300; attempt++) {
    const current = (await (await fetch(`${baseUrl}/v0/customdomains/${metadata.name}`, { headers })).json()) as { status: string };
    if (current.status === 'DEPLOYED') return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the custom domain did not become DEPLOYED');
}

async function main() {
  const config = benchConfig('gateway', 56600);
  log(`gateway benchmark: ${REQUESTS} requests at concurrency ${CONCURRENCY}`);
  const platform = await startBenchPlatform(config, log);
  const { app, credentials, pg } = platform;
  const full = platform.config;
  await app.listen({ host: '127.0.0.1', port: 0 });
  const gateway = await buildRunApp(full);
  await gateway.listen({ host: '127.0.0.1', port: 0 });
  try {
    const name = `bench-${Date.now().toString(36)}`;
    const baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const deployed = await deployFolder(path.join(repoRoot(), 'examples', 'agent'), { baseUrl, apiKey: credentials.apiKey, workspace: credentials.workspace }, { name });
    if (deployed.status !== 'DEPLOYED') throw new Error(`the agent did not deploy: ${JSON.stringify(deployed.events)}`);
    const { rows } = await pg.query<{ s: string }>("SELECT state #>> '{serving,socketPath}' AS s FROM resources WHERE kind = 'agents' AND name = $1", [name]);
    const socketPath = rows[0].s;
    const domain = `${name}.bench.example`;
    await createCustomDomain(baseUrl, credentials, { metadata: { name }, spec: { domain, target: { kind: 'agent', name } } });

    const gatewayAgent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const directAgent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const domainAgent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const gatewayTarget = { host: '127.0.0.1', port: (gateway.server.address() as AddressInfo).port };
    const auth = { authorization: `Bearer ${credentials.apiKey}` };
    const results = await measureInterleaved(
      [
        { key: 'gateway', op: () => post(gatewayAgent, gatewayTarget, `/${credentials.workspace}/agents/${name}`, auth) },
        { key: 'domain', op: () => post(domainAgent, gatewayTarget, '/', { ...auth, host: domain }) },
        { key: 'direct', op: () => post(directAgent, { socketPath }, '/', {}) },
      ],
      { count: REQUESTS, concurrency: CONCURRENCY, warmup: 200, rounds: 8 },
    );
    const viaGateway = results.get('gateway')!;
    const byDomain = results.get('domain')!;
    const direct = results.get('direct')!;
    const r = ratios(viaGateway, direct);
    log('');
    log(
      formatTable(
        ['path', 'req/s', 'p50 ms', 'p99 ms'],
        [
          ['gateway (run_url)', viaGateway.throughputPerSecond.toFixed(0), viaGateway.p50Ms.toFixed(2), viaGateway.p99Ms.toFixed(2)],
          ['gateway by custom domain (Host)', byDomain.throughputPerSecond.toFixed(0), byDomain.p50Ms.toFixed(2), byDomain.p99Ms.toFixed(2)],
          ['direct (agent port)', direct.throughputPerSecond.toFixed(0), direct.p50Ms.toFixed(2), direct.p99Ms.toFixed(2)],
        ],
      ),
    );
    log('');
    log(`throughput ratio gateway/direct: ${(1 / r.throughput).toFixed(2)} (target >= 0.8)`);
    log(`p50 overhead: ${(viaGateway.p50Ms - direct.p50Ms).toFixed(2)} ms (target <= 1 ms); p99 overhead: ${(viaGateway.p99Ms - direct.p99Ms).toFixed(2)} ms`);
    log(`custom domain vs path: p50 ${(byDomain.p50Ms - viaGateway.p50Ms).toFixed(2)} ms, throughput ratio ${(byDomain.throughputPerSecond / viaGateway.throughputPerSecond).toFixed(2)}`);
    gatewayAgent.destroy();
    directAgent.destroy();
    domainAgent.destroy();
  } finally {
    await gateway.close();
    await platform.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
