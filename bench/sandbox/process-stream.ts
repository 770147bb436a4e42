import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { BwrapRuntime } from '../../runtime/bwrap-runtime';
import { formatTable } from '../../domain/text-table';
import { buildSandboxGatewayApp } from '../../api/gateway/sandbox-app';
import { benchConfig, startBenchPlatform } from '../common/platform';
import { percentile } from '../common/stats';

/**
 * Streamed execution (run by hand after a build: `node dist/bench/sandbox/process-stream.js`, as
 * root): from a line printed by a command in a sandbox to the line received by the client of
 * POST /process with `Accept: application/x-ndjson` (what the SDK's exec with onLog reads), over
 * the sandbox's socket, and as the SDK calls it, at the sandbox's URL through the sandbox gateway
 * of a whole platform (its own services, started here). Floor, in the same run: the same command as a child process of this one,
 * its line read from the pipe. Each line carries the moment it was printed (the wall clock, which
 * the sandbox shares with the host); lines come 10 ms apart so that each is seen on its own.
 * Options (environment): BENCH_LINES (300), HANGAR_AGENT_DIR (the compiled agent, default
 * dist/sandbox-agent).
 */
const LINES = Number(process.env.BENCH_LINES ?? 300);
const log = (line: string) => process.stdout.write(`${line}\n`);

/** A node program printing the moment of each of its lines, `LINES` of them, 10 ms apart. */
const PRINTER = `let i=0;const t=setInterval(()=>{process.stdout.write(String(performance.timeOrigin+performance.now())+'\\n');if(++i>=${LINES})clearInterval(t)},10)`;

const now = () => performance.timeOrigin + performance.now();

/** Calls `line` with each whole line of a stream of text chunks, as they come. */
function eachLine(stream: NodeJS.ReadableStream, line: (text: string) => void): Promise<void> {
  let partial = '';
  stream.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop()!;
    for (const text of lines) line(text);
  });
  return new Promise((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('error', reject);
  });
}

/** The floor: the printer as a child of this process, read from its stdout pipe. */
async function pipeFromChild(): Promise<number[]> {
  const samples: number[] = [];
  const child = spawn(process.execPath, ['-e', PRINTER], { stdio: ['ignore', 'pipe', 'inherit'] });
  await eachLine(child.stdout, (text) => samples.push(now() - Number(text)));
  return samples;
}

/**
 * The printer in a sandbox, its lines read from the NDJSON answer of POST /process at `target`
 * (the sandbox's socket, or its URL through the gateway with the caller's credentials).
 */
function streamedExecution(target: http.RequestOptions): Promise<number[]> {
  const samples: number[] = [];
  const body = JSON.stringify({ command: `exec node -e "${PRINTER}"`, waitForCompletion: true });
  return new Promise((resolve, reject) => {
    const headers = { ...target.headers, 'content-type': 'application/json', accept: 'application/x-ndjson' };
    const request = http.request({ ...target, method: 'POST', headers }, (response) => {
      if (response.headers['content-type'] !== 'application/x-ndjson') reject(new Error(`POST /process answered ${response.statusCode} ${response.headers['content-type']}`));
      eachLine(response, (text) => {
        const event = JSON.parse(text) as { type: string; data?: string };
        if (event.type === 'stdout') samples.push(now() - Number(event.data));
      }).then(() => (samples.length === LINES ? resolve(samples) : reject(new Error(`${samples.length} lines received of ${LINES}`))), reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

/** Over the agent's socket: a sandbox of the runtime alone. */
async function throughSocket(): Promise<number[]> {
  const dataDir = path.join(process.cwd(), '.data-bench', `process-stream-${process.pid}`);
  const runtime = new BwrapRuntime({ dataDir, agentDir: process.env.HANGAR_AGENT_DIR });
  const id = `bench-stream-${process.pid}`;
  try {
    const handle = await runtime.start({ id, workspaceId: 'bench', image: 'base', memoryMb: 512, envs: [], volumes: [] });
    return await streamedExecution({ socketPath: handle.socketPath, path: '/process' });
  } finally {
    await runtime.remove(id).catch(() => undefined);
    await runtime.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** As the SDK calls it: a sandbox created through the API, POST /process at its URL through the sandbox gateway. */
async function throughGateway(): Promise<number[]> {
  const platform = await startBenchPlatform(benchConfig('process-stream', 56760), (line) => log(line));
  const gateway = await buildSandboxGatewayApp(platform.config, platform.runtime);
  try {
    await gateway.listen({ host: platform.config.host, port: platform.config.sandboxPort });
    const headers = { authorization: `Bearer ${platform.credentials.apiKey}`, 'x-service-workspace': platform.credentials.workspace };
    // The platform's data outlives a run: a name of this run's own, deleted at the end.
    const name = `bench-stream-${Date.now().toString(36)}`;
    const created = await platform.app.inject({ method: 'POST', url: '/v0/sandboxes', headers, payload: { metadata: { name }, spec: { runtime: { memory: 512 } } } });
    if (created.statusCode !== 200) throw new Error(`create: ${created.body}`);
    const url = new URL(`${created.json().metadata.url}/process`);
    try {
      // The gateway holds the first call until the sandbox runs.
      return await streamedExecution({ host: url.hostname, port: url.port, path: url.pathname, headers });
    } finally {
      await platform.app.inject({ method: 'DELETE', url: `/v0/sandboxes/${name}`, headers });
    }
  } finally {
    await gateway.close();
    await platform.stop();
  }
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('the sandbox benchmark runs as root (bubblewrap and cgroups)');
  log(`process-stream benchmark: ${LINES} lines, 10 ms apart`);
  const floor = await pipeFromChild();
  const rows = [
    ['onLog: line printed in a sandbox -> NDJSON event, agent socket', await throughSocket()],
    ['onLog: line printed in a sandbox -> NDJSON event, through the gateway', await throughGateway()],
  ] as const;
  const p = (xs: number[], q: number) => percentile(xs, q).toFixed(2);
  const ratio = (xs: number[]) => `${(percentile(xs, 50) / percentile(floor, 50)).toFixed(1)}x`;
  log(
    '\n' +
      formatTable(
        ['measure', 'p50 ms', 'p95 ms', 'floor', 'p50 ms', 'p95 ms', 'p50 ratio', 'target'],
        rows.map(([what, samples]) => [what, p(samples, 50), p(samples, 95), 'line printed by a child -> read from its pipe', p(floor, 50), p(floor, 95), ratio(samples), 'p50 <= 10 ms']),
      ),
  );
}

main().catch((err) => {
  console.error(`process-stream benchmark failed: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
