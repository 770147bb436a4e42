import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tar from 'tar';
import { TERMINAL_EXECUTION_STATUSES, type ExecutionStatus } from '../../domain/jobs/execution';
import { formatTable } from '../../domain/text-table';
import { benchConfig, startBenchPlatform } from '../common/platform';

/**
 * Job benchmark (after a build, as root: `node dist/bench/workloads/jobs.js`).
 *
 * Runs one execution of BENCH_JOB_TASKS (1,000) trivial tasks (`true`) at concurrency
 * BENCH_JOB_CONCURRENCY (20) through the API, the execution workflow and the node's sandbox,
 * and times it from the POST to the final status. The floor is the same number of processes
 * spawned directly with child_process at the same concurrency (before and after, averaged).
 * Target: ratio <= 2.
 * Own data folder (.data-bench/jobs) and ports, apart from npm start, the tests and the other benchmarks.
 */
const TASKS = Number(process.env.BENCH_JOB_TASKS ?? 1000);
const CONCURRENCY = Number(process.env.BENCH_JOB_CONCURRENCY ?? 20);
const log = (line: string) => process.stdout.write(`${line}\n`);

/** The floor: the same processes, spawned straight from here, CONCURRENCY at a time. */
async function spawnDirectly(count: number, concurrency: number): Promise<number> {
  const began = performance.now();
  let next = 0;
  const lane = async () => {
    while (next < count) {
      next++;
      await new Promise<void>((resolve, reject) => {
        const child = spawn('/bin/sh', ['-c', 'true'], { stdio: 'ignore' });
        child.on('error', reject);
        child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`exit ${code}`))));
      });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return performance.now() - began;
}

async function main() {
  const config = benchConfig('jobs', 56620);
  log(`job benchmark: ${TASKS} tasks at concurrency ${CONCURRENCY}; data in ${path.relative(process.cwd(), config.dataDir)}`);
  const platform = await startBenchPlatform(config, log, 30);
  const { app, credentials } = platform;
  try {
    const call = (method: 'GET' | 'POST', url: string, payload?: object) =>
      app.inject({ method, url, payload, headers: { authorization: `Bearer ${credentials.apiKey}`, 'x-service-workspace': credentials.workspace } });
    const name = `bench-${Date.now().toString(36)}`;
    const created = await call('POST', '/v0/jobs', { metadata: { name }, spec: { runtime: { command: ['true'], memory: 512, maxConcurrentTasks: CONCURRENCY } } });
    if (created.statusCode !== 200) throw new Error(`creating the job: ${created.body}`);
    // The code is irrelevant (every task runs `true`), but it takes the user's path: upload, deploy.
    const codeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-job-'));
    fs.writeFileSync(path.join(codeDir, 'README'), 'every task runs `true`\n');
    const chunks: Buffer[] = [];
    for await (const chunk of tar.c({ gzip: true, cwd: codeDir, portable: true }, ['README'])) chunks.push(chunk as Buffer);
    fs.rmSync(codeDir, { recursive: true, force: true });
    const upload = await app.inject({
      method: 'PUT',
      url: `/v0/jobs/${name}/code`,
      payload: Buffer.concat(chunks),
      headers: { authorization: `Bearer ${credentials.apiKey}`, 'x-service-workspace': credentials.workspace, 'content-type': 'application/gzip' },
    });
    if (upload.statusCode >= 300) throw new Error(`uploading the code: ${upload.body}`);
    for (;;) {
      const status = (await call('GET', `/v0/jobs/${name}`)).json().status;
      if (status === 'DEPLOYED') break;
      if (status === 'FAILED') throw new Error('the job failed to deploy');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }

    // The floor before and after the job, averaged: the machine's load drifts during a run.
    const floorBefore = await spawnDirectly(TASKS, CONCURRENCY);
    const began = performance.now();
    const post = await call('POST', `/${credentials.workspace}/jobs/${name}/executions`, { tasks: Array.from({ length: TASKS }, (_, i) => ({ i })) });
    if (post.statusCode !== 200) throw new Error(`starting the execution: ${post.body}`);
    let final: { status: ExecutionStatus; stats: Record<string, number> };
    for (;;) {
      final = (await call('GET', `/${credentials.workspace}/jobs/${name}/executions/${post.json().id}`)).json();
      if (TERMINAL_EXECUTION_STATUSES.includes(final.status)) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const jobMs = performance.now() - began;
    if (final.status !== 'succeeded') throw new Error(`the execution ended ${final.status}: ${JSON.stringify(final.stats)}`);
    const floorMs = (floorBefore + (await spawnDirectly(TASKS, CONCURRENCY))) / 2;
    log('');
    log(
      formatTable(
        ['what', 'total ms', 'tasks/s', 'floor', 'floor ms', 'ratio', 'target'],
        [[`job, ${TASKS} tasks @${CONCURRENCY}`, jobMs.toFixed(0), ((TASKS / jobMs) * 1000).toFixed(0), 'child_process spawn', floorMs.toFixed(0), (jobMs / floorMs).toFixed(2), '<= 2']],
      ),
    );
  } finally {
    await platform.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
