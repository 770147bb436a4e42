import os from 'node:os';
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createNodeActivities } from '../../activities/node-activities';
import { nodeTaskQueue } from '../../domain/config';
import { formatTable } from '../../domain/text-table';
import { BwrapRuntime } from '../../runtime/bwrap-runtime';
import { NodeHeartbeat } from '../../runtime/node-heartbeat';
import { PlatformServices } from '../../runtime/platform-services/platform-services';
import { VolumeStore } from '../../runtime/volume-store';
import { setNodeDrained } from '../../store/nodes';
import { machineBusyMs, processCpuMs } from '../common/cpu';
import { benchConfig, startBenchPlatform, type BenchPlatform } from '../common/platform';

/**
 * Sandbox creates per second with two node workers against one, on this one machine (run after a
 * build: `node dist/bench/nodes/creates.js`): the bench platform (API, control worker and node
 * `local` in this process) plus a second node worker `n2` with its own data folder, runtime,
 * task queue and heartbeat. A round creates BENCH_CREATES sandboxes, BENCH_CONCURRENCY at a time,
 * through POST /v0/sandboxes until every one is DEPLOYED; with one node, `n2` is drained. Rounds
 * alternate (one, two, one, two) so drift of the machine's load hits both. Where the time goes:
 * the CPU of this process (API, workflows, activities) and of the whole machine (sandbox
 * processes, PostgreSQL, Temporal, ClickHouse included) per create.
 */
const CREATES = Number(process.env.BENCH_CREATES ?? 16);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);

interface Round {
  nodes: 1 | 2;
  perSecond: number;
  processCpuMs: number;
  machineBusyMs: number;
  onSecond: number;
}

async function startSecondNode(platform: BenchPlatform) {
  const config = { ...platform.config, nodeId: 'n2', dataDir: `${platform.config.dataDir}-n2` };
  fs.mkdirSync(config.dataDir, { recursive: true });
  const runtime = new BwrapRuntime({ dataDir: config.dataDir, warmPool: 0 });
  const services = await PlatformServices.forNode(config, platform.pg);
  const temporal = new Client({ connection: await Connection.connect({ address: config.temporalAddress }), namespace: config.temporalNamespace });
  const heartbeat = NodeHeartbeat.forNode(config, platform.pg, () => runtime.list());
  await heartbeat.start();
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const worker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: nodeTaskQueue(config),
    activities: createNodeActivities({ config, runtime, volumes: new VolumeStore({ dataDir: config.dataDir }), pg: platform.pg, platform: services, temporal }),
  });
  const running = worker.run();
  return {
    async stop() {
      worker.shutdown();
      await running.catch(() => undefined);
      await heartbeat.stop();
      for (const sandbox of await runtime.list()) await runtime.remove(sandbox.id).catch(() => undefined);
      await runtime.close();
      await services.closeAll();
      await connection.close();
      await temporal.connection.close();
    },
  };
}

async function round(platform: BenchPlatform, nodes: 1 | 2, index: number): Promise<Round> {
  await setNodeDrained(platform.pg, 'n2', nodes === 1);
  const headers = { authorization: `Bearer ${platform.credentials.apiKey}`, 'x-service-workspace': platform.credentials.workspace };
  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) => platform.app.inject({ method, url, headers, payload });
  const names = Array.from({ length: CREATES }, (_, i) => `r${index}-${nodes}n-${i}-${process.pid}`);
  const until = async (name: string, done: (status: number, body: { status?: string }) => boolean) => {
    for (;;) {
      const res = await call('GET', `/v0/sandboxes/${name}`);
      if (done(res.statusCode, res.json())) return res.json();
      if (res.json().status === 'FAILED') throw new Error(`sandbox ${name} failed: ${res.body}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const cpu = processCpuMs([process.pid]);
  const busy = machineBusyMs();
  const began = performance.now();
  let next = 0;
  const placed: string[] = [];
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < names.length) {
        const name = names[next++];
        const res = await call('POST', '/v0/sandboxes', { metadata: { name }, spec: { runtime: { memory: 128 } } });
        if (res.statusCode !== 200) throw new Error(`create ${name}: ${res.statusCode} ${res.body}`);
        placed.push((await until(name, (_, body) => body.status === 'DEPLOYED')).node);
      }
    }),
  );
  const seconds = (performance.now() - began) / 1000;
  const result: Round = {
    nodes,
    perSecond: CREATES / seconds,
    processCpuMs: (processCpuMs([process.pid]) - cpu) / CREATES,
    machineBusyMs: (machineBusyMs() - busy) / CREATES,
    onSecond: placed.filter((node) => node === 'n2').length,
  };
  for (const name of names) await call('DELETE', `/v0/sandboxes/${name}`);
  for (const name of names) await until(name, (status) => status === 404);
  return result;
}

async function main(): Promise<void> {
  const platform = await startBenchPlatform(benchConfig('nodes-creates', 58140, { HANGAR_SANDBOX_NETWORK: 'off' }), (line) => console.log(line));
  const second = await startSecondNode(platform);
  try {
    const rounds: Round[] = [];
    for (let i = 0; i < ROUNDS; i++) for (const nodes of [1, 2] as const) rounds.push(await round(platform, nodes, i));
    const mean = (nodes: 1 | 2, pick: (r: Round) => number) => {
      const of = rounds.filter((r) => r.nodes === nodes);
      return of.reduce((sum, r) => sum + pick(r), 0) / of.length;
    };
    const rows = rounds.map((r) => [String(r.nodes), r.perSecond.toFixed(2), r.processCpuMs.toFixed(0), r.machineBusyMs.toFixed(0), `${r.onSecond}/${CREATES}`]);
    console.log(`\nSandbox creates (${CREATES} per round, ${CONCURRENCY} at a time, POST until DEPLOYED), this machine's ${os.availableParallelism()} cores\n`);
    console.log(formatTable(['nodes', 'creates/s', 'this process CPU ms/create', 'machine busy ms/create', 'on n2'], rows));
    console.log(`\ntwo nodes vs one: ${(mean(2, (r) => r.perSecond) / mean(1, (r) => r.perSecond)).toFixed(2)}x creates/s`);
  } finally {
    await second.stop();
    await platform.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
