import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildSandboxGatewayApp } from '../../api/gateway/sandbox-app';
import { formatTable } from '../../domain/text-table';
import { SandboxAgentClient } from '../../runtime/agent-client';
import { proxyRequest } from '../../runtime/http-proxy';
import { HttpClient } from '../common/http';
import { measureInterleaved } from '../common/load';
import { benchConfig, createBenchSandbox, startBenchPlatform } from '../common/platform';
import type { LatencySummary } from '../common/stats';

/**
 * `{sandbox_url}/port/{port}/...` (run by hand after a build: `node dist/bench/sandbox/port.js`, as
 * root). A small HTTP server runs in a sandbox; one request at a time, its p50/p95 through the
 * sandbox gateway's /port/{port}, beside the floor: the same server program on the host, reached
 * directly over loopback. Printed as ratio and added milliseconds.
 *
 * Two more rows tell where the time goes: a bare proxy (the gateway's own streaming, without
 * credentials or routes) straight to the sandbox's byte forwarder for the port, the hop the
 * gateway takes; and the gateway to the sandbox's API (GET /health), the same checks on another
 * path. Options: BENCH_RUNS (2000 requests of each kind).
 */
const RUNS = Number(process.env.BENCH_RUNS ?? 2000);
const PORT_IN_SANDBOX = 8000;
const SERVER = "require('http').createServer((q, s) => q.resume().on('end', () => s.end('ok'))).listen(Number(process.argv[1]), '127.0.0.1')";

const log = (line: string) => console.log(line);

/** The same server program on the host, on a port of its own. */
async function hostServer(): Promise<{ child: ChildProcess; port: number }> {
  const port = await new Promise<number>((resolve) => {
    const probe = http.createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address() as AddressInfo;
      probe.close(() => resolve(free));
    });
  });
  const child = spawn(process.execPath, ['-e', SERVER, String(port)], { stdio: 'ignore' });
  const client = new HttpClient(`http://127.0.0.1:${port}`, 1);
  for (let tries = 0; ; tries++) {
    try {
      await client.expect(200, 'GET', '/');
      break;
    } catch (err) {
      if (tries > 200) throw err;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  client.close();
  return { child, port };
}

/** A proxy with nothing but the gateway's streaming, to one Unix socket, listening on loopback. */
async function bareProxy(socketPath: string): Promise<{ server: http.Server; url: string }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const server = http.createServer((req, res) =>
    proxyRequest(req, res, { upstream: { socketPath }, path: req.url ?? '/', agent, onUnreachable: () => res.writeHead(502).end() }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function row(what: string, figure: LatencySummary, floorName: string, floor: LatencySummary): (string | number)[] {
  return [what, figure.p50Ms.toFixed(3), figure.p95Ms.toFixed(3), floorName, floor.p50Ms.toFixed(3), `${(figure.p50Ms / floor.p50Ms).toFixed(2)}x`, `+${(figure.p50Ms - floor.p50Ms).toFixed(3)}`];
}

async function main() {
  const platform = await startBenchPlatform(benchConfig('sandbox-port', 57340, { HANGAR_SANDBOX_WARM_POOL: '0' }), log);
  const gateway = await buildSandboxGatewayApp(platform.config, platform.runtime);
  const origin = await gateway.listen({ host: '127.0.0.1', port: 0 });
  const headers = { authorization: `Bearer ${platform.credentials.apiKey}`, 'x-service-workspace': platform.credentials.workspace };
  const host = await hostServer();
  const closers: (() => unknown)[] = [() => host.child.kill(), () => gateway.close(), () => platform.stop()];
  try {
    const { url, resourceId } = await createBenchSandbox(platform, `bench-port-${Date.now().toString(36)}`, 256);
    const agent = new SandboxAgentClient(platform.runtime.socketPath(resourceId));
    await agent.startProcess({ name: 'server', command: `exec node -e "${SERVER}" ${PORT_IN_SANDBOX}`, waitForPorts: [PORT_IN_SANDBOX] });

    const viaGateway = new HttpClient(origin, 1);
    const direct = new HttpClient(`http://127.0.0.1:${host.port}`, 1);
    const toForwarder = await bareProxy(await platform.runtime.portSocket(resourceId, PORT_IN_SANDBOX));
    const viaForwarder = new HttpClient(toForwarder.url, 1);
    closers.unshift(() => toForwarder.server.close(), () => [viaGateway, direct, viaForwarder].forEach((c) => c.close()));
    const gatewayHeaders = { host: url.host, authorization: headers.authorization };

    const figures = await measureInterleaved(
      [
        { key: 'gateway', op: async () => void (await viaGateway.expect(200, 'GET', `${url.pathname}/port/${PORT_IN_SANDBOX}/`, gatewayHeaders)) },
        { key: 'direct', op: async () => void (await direct.expect(200, 'GET', '/')) },
        { key: 'api', op: async () => void (await viaGateway.expect(200, 'GET', `${url.pathname}/health`, gatewayHeaders)) },
        { key: 'forwarder', op: async () => void (await viaForwarder.expect(200, 'GET', '/')) },
      ],
      { count: RUNS, concurrency: 1, warmup: 200, rounds: 10 },
    );
    const f = (key: string) => figures.get(key)!;
    log(
      `\n${formatTable(
        ['measure (GET, one at a time)', 'p50 ms', 'p95 ms', 'floor', 'p50 ms', 'ratio', 'added ms'],
        [
          row('sandbox.fetch path: gateway /port/{port}/', f('gateway'), 'same server on the host, direct', f('direct')),
          row('  of which: bare proxy -> the port\'s forwarder socket', f('forwarder'), 'same server on the host, direct', f('direct')),
          row('for comparison: gateway -> sandbox API GET /health', f('api'), 'same server on the host, direct', f('direct')),
        ],
      )}`,
    );
  } finally {
    for (const close of closers) await close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
