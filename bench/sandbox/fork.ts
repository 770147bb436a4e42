import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { formatTable } from '../../domain/text-table';
import { SandboxAgentClient } from '../../runtime/agent-client';
import { benchConfig, createBenchSandbox, startBenchPlatform, type BenchPlatform } from '../common/platform';
import { percentile } from '../common/stats';

/**
 * Fork of a sandbox that wrote 500 MB (run by hand after a build: `node dist/bench/sandbox/fork.js`,
 * as root). Each round forks the sandbox through the management API and measures the fork call
 * (it answers once the snapshot of the files is taken) and the time until the fork answers its
 * first command; the floor, in alternating rounds, is `cp -a` of the same files on the host.
 * Targets: fork p50 <= 300 ms. Options: BENCH_RUNS (7), BENCH_MB (500, written as 10 MB files).
 */
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const MEGABYTES = Number(process.env.BENCH_MB ?? 500);

const log = (line: string) => console.log(line);

async function api(platform: BenchPlatform, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) {
  const headers = { authorization: `Bearer ${platform.credentials.apiKey}`, 'x-service-workspace': platform.credentials.workspace };
  const reply = await platform.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  if (reply.statusCode !== 200) throw new Error(`${method} ${url}: ${reply.statusCode} ${reply.body}`);
  return reply.json();
}

async function until<T>(check: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** One fork: the call (snapshot taken), then the fork's first command answered; the fork and its snapshot deleted after. */
async function forkOnce(platform: BenchPlatform, source: string, round: number): Promise<{ callMs: number; readyMs: number }> {
  const target = `fork-${process.pid}-${round}`;
  const began = performance.now();
  const forked = await api(platform, 'POST', `/v0/sandboxes/${source}/fork`, { targetName: target });
  const callMs = performance.now() - began;
  await until(async () => ((await api(platform, 'GET', `/v0/sandboxes/${target}`)).status === 'DEPLOYED' ? true : undefined));
  const { rows } = await platform.pg.query<{ id: string }>("SELECT id FROM resources WHERE kind = 'sandboxes' AND name = $1", [target]);
  const agent = new SandboxAgentClient(platform.runtime.socketPath(rows[0].id));
  const done = await agent.startProcess({ command: 'test -s /workspace/f1 && echo ok', waitForCompletion: true });
  if (done.logs !== 'ok\n') throw new Error(`the fork's first command answered ${JSON.stringify(done.logs)}`);
  const readyMs = performance.now() - began;
  await api(platform, 'DELETE', `/v0/sandboxes/${target}`);
  await api(platform, 'DELETE', `/v0/snapshots/${forked.snapshotId}`);
  await until(async () => ((await platform.runtime.status(rows[0].id)) ? undefined : true));
  // The round ends once its 1 GB (the fork's files, the snapshot's) is deleted: the next round's
  // fork and cp -a then run on a node as quiet as each other, not beside this round's removals.
  const forkFolder = path.dirname(platform.runtime.layout(rows[0].id).fsRoot);
  await until(async () => {
    const snapshot = await platform.pg.query('SELECT 1 FROM sandbox_snapshots WHERE id = $1', [forked.snapshotId]);
    return snapshot.rowCount === 0 && !fs.existsSync(forkFolder) ? true : undefined;
  });
  return { callMs, readyMs };
}

/** The floor: `cp -a` of the sandbox's files on the host, page cache as warm as the fork's. */
function copyOnce(from: string, scratch: string): number {
  const began = performance.now();
  execFileSync('cp', ['-a', '--reflink=auto', '--', from, scratch]);
  const ms = performance.now() - began;
  fs.rmSync(scratch, { recursive: true, force: true });
  return ms;
}

async function main(): Promise<void> {
  const platform = await startBenchPlatform(benchConfig('sandbox-fork', 57540, { HANGAR_SANDBOX_WARM_POOL: '0' }), log);
  try {
    // Names of this run's own: the platform's data outlives a run.
    const source = await createBenchSandbox(platform, `fork-source-${process.pid}`, 1024);
    const agent = new SandboxAgentClient(platform.runtime.socketPath(source.resourceId));
    const files = Math.ceil(MEGABYTES / 10);
    const wrote = await agent.startProcess({ command: `for i in $(seq ${files}); do head -c 10M /dev/urandom > /workspace/f$i; done; sync; echo done`, waitForCompletion: true, timeout: 600 });
    if (wrote.logs !== 'done\n') throw new Error(`writing the files failed: ${wrote.logs}`);
    const sourceFiles = platform.runtime.layout(source.resourceId).fsRoot;
    const scratch = path.join(platform.config.dataDir, 'cp-floor');
    log(`fork benchmark: ${RUNS} rounds, the source wrote ${files * 10} MB in ${files} files`);
    const calls: number[] = [];
    const ready: number[] = [];
    const copies: number[] = [];
    for (let round = 0; round < RUNS; round++) {
      copies.push(copyOnce(sourceFiles, scratch));
      const { callMs, readyMs } = await forkOnce(platform, source.name, round);
      calls.push(callMs);
      ready.push(readyMs);
    }
    const floor = percentile(copies, 50);
    const row = (what: string, samples: number[], target: string) => [what, percentile(samples, 50).toFixed(0), percentile(samples, 95).toFixed(0), floor.toFixed(0), `${(percentile(samples, 50) / floor).toFixed(2)}x`, target];
    log(
      formatTable(
        ['measure (ms)', 'p50', 'p95', 'cp -a p50', 'ratio', 'target'],
        [row('POST /fork answered (files captured)', calls, 'p50 <= 300 ms'), row('fork -> its first command answered', ready, ''), row('cp -a of the same files (the floor)', copies, '')],
      ),
    );
    await api(platform, 'DELETE', `/v0/sandboxes/${source.name}`);
  } finally {
    await platform.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
