import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { Pool } from 'pg';
import { createActivities } from '../../activities/control-activities';
import { removeOrphanedSnapshotFiles } from '../../runtime/orphaned-snapshots';
import { createNodeActivities } from '../../activities/node-activities';
import { captureOnRequest } from '../../activities/snapshot-node';
import { createClickHouse } from '../../store/clickhouse-client';
import { createPool } from '../../store/postgres-pool';
import { nodeTaskQueue, type HangarConfig } from '../../domain/config';
import { PlatformServices } from '../../runtime/platform-services/platform-services';
import type { NodeActivityDeps } from '../../activities/node-activities';
import type { RuntimeVolumeMount } from '../../runtime/sandbox-runtime';
import { VolumeStore } from '../../runtime/volume-store';
import { removeAbandonedSandboxes } from '../../runtime/abandoned-sandboxes';
import { removeMovedJobSandboxes } from '../../runtime/moved-job-sandboxes';
import { NodeHeartbeat } from '../../runtime/node-heartbeat';
import { testWorkflowBundleFile } from '../setup/test-config';

export interface RunningWorker {
  stop(): Promise<void>;
}

async function run(worker: Worker, connection: NativeConnection): Promise<RunningWorker> {
  const running = worker.run();
  return {
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running.catch(() => undefined);
      await connection.close();
    },
  };
}

/** The control worker, in this process, on the configuration's task queue. */
export async function startControlWorker(config: HangarConfig, pg: Pool): Promise<RunningWorker> {
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const temporal = new Client({ connection: await Connection.connect({ address: config.temporalAddress }), namespace: config.temporalNamespace });
  const worker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    workflowBundle: { codePath: testWorkflowBundleFile(config) },
    activities: createActivities({ config, pg, clickhouse: createClickHouse(config), temporal }),
  });
  const running = await run(worker, connection);
  return {
    async stop() {
      await running.stop();
      await temporal.connection.close();
    },
  };
}

/**
 * The node (runtime) worker, in this process, on the configuration's node task queue, with the
 * same activities as workers/node.ts.
 */
export async function startNodeWorker(
  config: HangarConfig,
  runtime: NodeActivityDeps['runtime'],
  options: { pg?: Pool; jobMounts?: RuntimeVolumeMount[] } = {},
): Promise<RunningWorker> {
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const temporal = new Client({ connection: await Connection.connect({ address: config.temporalAddress }), namespace: config.temporalNamespace });
  const pg = options.pg ?? createPool(config.databaseUrl);
  const platform = await PlatformServices.forNode(config, pg);
  await removeMovedJobSandboxes(runtime, pg, config.nodeId);
  await removeAbandonedSandboxes(runtime, pg, config.nodeId);
  await removeOrphanedSnapshotFiles(runtime, pg, config.dataDir);
  // Like workers/node.ts, the node reports itself: placement chooses among the nodes that do.
  const heartbeat = NodeHeartbeat.forNode(config, pg, () => runtime.list());
  await heartbeat.start();
  const worker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: nodeTaskQueue(config),
    activities: createNodeActivities({ config, runtime, volumes: new VolumeStore({ dataDir: config.dataDir }), pg, platform, temporal, jobMounts: options.jobMounts }),
  });
  const snapshotRequests = await captureOnRequest({ runtime, pg, nodeQueue: nodeTaskQueue(config) });
  const running = await run(worker, connection);
  return {
    async stop() {
      await snapshotRequests.close();
      await heartbeat.stop();
      await running.stop();
      await platform.closeAll();
      await temporal.connection.close();
      if (!options.pg) await pg.end();
    },
  };
}

/** Polls until `check` returns a value (not undefined), or fails after `timeoutMs` with `what`. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}
