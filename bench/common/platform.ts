import { ensureNodeBaseImage } from '../../activities/node-base-image';
import { NodeImageStore } from '../../store/node-images';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { createActivities } from '../../activities/control-activities';
import { createNodeActivities } from '../../activities/node-activities';
import { captureOnRequest } from '../../activities/snapshot-node';
import { buildApp } from '../../api/app';
import type { BootstrapCredentials } from '../../store/bootstrap';
import { createClickHouse } from '../../store/clickhouse-client';
import { createPool } from '../../store/postgres-pool';
import path from 'node:path';
import { loadConfig, nodeTaskQueue, type HangarConfig } from '../../domain/config';
import { workflowCode } from '../../workers/workflow-bundle';
import { PlatformServices } from '../../runtime/platform-services/platform-services';
import { BwrapRuntime } from '../../runtime/bwrap-runtime';
import { NodeHeartbeat } from '../../runtime/node-heartbeat';
import { VolumeStore } from '../../runtime/volume-store';
import { prepare } from '../../scripts/prepare';
import { repoRoot } from '../../scripts/stack/binaries';
import type { Stack } from '../../scripts/stack';
import { configOnStack } from './stack';

export interface BenchPlatform {
  stack: Stack;
  credentials: BootstrapCredentials;
  /** The configuration with the stack's service addresses. */
  config: HangarConfig;
  pg: Pool;
  /** The base_url app, ready (not listening). */
  app: FastifyInstance;
  runtime: BwrapRuntime;
  stop(): Promise<void>;
}

/**
 * A whole platform in this process for a workload benchmark: its own services, the base_url app,
 * and the control and node workers with the same activities as the real workers.
 */
export async function startBenchPlatform(config: HangarConfig, log: (line: string) => void, poolSize = 10): Promise<BenchPlatform> {
  const { stack, credentials } = await prepare(config, (line) => log(`  [stack] ${line}`), { keepRunning: false });
  const full = configOnStack(config, stack);
  const pg = createPool(stack.databaseUrl, poolSize);
  const app = await buildApp(full);
  await app.ready();
  const runtime = new BwrapRuntime({ dataDir: full.dataDir, warmPool: full.sandboxWarmPool });
  // As workers/node.ts does at its start, but awaited: base-image, the default image, is on the
  // node (built once per bench data folder) and the warm pool on it fills, before any measure.
  const built = await ensureNodeBaseImage(runtime, { store: new NodeImageStore(pg), nodeId: full.nodeId });
  log(`  [node] base-image ${built.digest}`);
  await runtime.prewarm();
  const platform = await PlatformServices.forNode(full, pg);
  // Like workers/node.ts, the node reports itself: sandboxes, volumes and jobs are placed among the nodes that do.
  const heartbeat = NodeHeartbeat.forNode(full, pg, () => runtime.list());
  await heartbeat.start();
  const temporal = new Client({ connection: await Connection.connect({ address: full.temporalAddress }), namespace: full.temporalNamespace });
  const workers = await Promise.all([
    Worker.create({
      connection: await NativeConnection.connect({ address: full.temporalAddress }),
      namespace: full.temporalNamespace,
      taskQueue: full.taskQueue,
      // The build's bundle, as the control worker uses: no bundling at every benchmark start.
      ...workflowCode(),
      activities: createActivities({ config: full, pg, clickhouse: createClickHouse(full), temporal }),
    }),
    Worker.create({
      connection: await NativeConnection.connect({ address: full.temporalAddress }),
      namespace: full.temporalNamespace,
      taskQueue: nodeTaskQueue(full),
      activities: createNodeActivities({ config: full, runtime, volumes: new VolumeStore({ dataDir: full.dataDir }), pg, platform, temporal }),
    }),
  ]);
  const snapshotRequests = await captureOnRequest({ runtime, pg, nodeQueue: nodeTaskQueue(full) });
  const running = workers.map((w) => w.run());
  return {
    stack,
    credentials,
    config: full,
    pg,
    app,
    runtime,
    async stop() {
      await snapshotRequests.close();
      for (const w of workers) w.shutdown();
      await Promise.allSettled(running);
      await heartbeat.stop();
      await platform.closeAll();
      for (const sandbox of await runtime.list()) await runtime.remove(sandbox.id).catch(() => undefined);
      // The warm pool's sandboxes too: a benchmark leaves nothing running.
      await runtime.close();
      await app.close();
      await temporal.connection.close();
      await pg.end();
      await stack.stop();
    },
  };
}

/** A sandbox a benchmark made through the management API, once DEPLOYED. */
export interface BenchSandbox {
  name: string;
  /** Its metadata.url: the sandbox gateway's address for it. */
  url: URL;
  /** The node's id for it (its socket, its ports' forwarders). */
  resourceId: string;
}

/** Creates a sandbox with `memoryMb` through the API as the bootstrap admin, and waits until it is DEPLOYED. */
export async function createBenchSandbox(platform: BenchPlatform, name: string, memoryMb: number): Promise<BenchSandbox> {
  const headers = { authorization: `Bearer ${platform.credentials.apiKey}`, 'x-service-workspace': platform.credentials.workspace };
  const created = await platform.app.inject({ method: 'POST', url: '/v0/sandboxes', headers, payload: { metadata: { name }, spec: { runtime: { memory: memoryMb } } } });
  if (created.statusCode !== 200) throw new Error(`create ${name}: ${created.statusCode} ${created.body}`);
  for (;;) {
    const got = await platform.app.inject({ method: 'GET', url: `/v0/sandboxes/${name}`, headers });
    if (got.json().status === 'DEPLOYED') break;
    if (got.json().status === 'FAILED') throw new Error(`sandbox ${name} failed: ${got.body}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const { rows } = await platform.pg.query<{ id: string }>("SELECT id FROM resources WHERE kind = 'sandboxes' AND name = $1", [name]);
  return { name, url: new URL(created.json().metadata.url), resourceId: rows[0].id };
}

/**
 * The environment that configures a benchmark: its own data folder (`.data-bench/<name>`, or
 * BENCH_DATA_DIR), its own task queue, and eight consecutive ports from `portBase` so benchmarks
 * never share services with each other, the tests or `npm start`. Built from scratch, not from
 * process.env: a developer's HANGAR_* settings must not move a benchmark onto a live installation.
 */
export function benchEnv(name: string, portBase: number, env: Record<string, string> = {}): Record<string, string> {
  const names = [
    'HANGAR_POSTGRES_PORT',
    'HANGAR_CLICKHOUSE_HTTP_PORT',
    'HANGAR_CLICKHOUSE_TCP_PORT',
    'HANGAR_TEMPORAL_PORT',
    'HANGAR_TEMPORAL_UI_PORT',
    'HANGAR_BASE_PORT',
    'HANGAR_RUN_PORT',
    'HANGAR_SANDBOX_PORT',
  ];
  return {
    ...Object.fromEntries(names.map((variable, i) => [variable, String(portBase + i)])),
    HANGAR_DATA_DIR: path.resolve(repoRoot(), process.env.BENCH_DATA_DIR || path.join('.data-bench', name)),
    HANGAR_TASK_QUEUE: `bench-${name}-${process.pid}`,
    ...env,
  };
}

/** A benchmark's configuration (see benchEnv), without request logging. */
export function benchConfig(name: string, portBase: number, env: Record<string, string> = {}): HangarConfig {
  return { ...loadConfig(benchEnv(name, portBase, env)), logLevel: '' };
}
