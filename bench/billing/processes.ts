import { NativeConnection, Worker } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import { createUsageActivities } from '../../activities/usage-flush';
import { startUsageFlush } from '../../workers/singletons';
import { isManagementWorker, serveInWorker, startManagementApi } from '../../api/management-cluster';
import { createClickHouse } from '../../store/clickhouse-client';
import { createPool } from '../../store/postgres-pool';
import type { HangarConfig } from '../../domain/config';

/**
 * The two services of the benchmark, each in its own process as in a deployment: the API
 * (ingestion and metrics over HTTP) and the control worker's usage flush (Temporal workflow).
 * Started by index.ts with `fork`, configured through HANGAR_BENCH_CONFIG.
 */
export const BENCH_TASK_QUEUE = 'billing-bench';

/** As the platform's API process serves base_url (HANGAR_API_PROCESSES processes). */
async function runApi(config: HangarConfig): Promise<void> {
  await startManagementApi(config, (detail, message) => console.error(message, detail));
}

async function runFlush(config: HangarConfig): Promise<void> {
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const worker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: BENCH_TASK_QUEUE,
    workflowsPath: require.resolve('../../workflows/usage-flush'),
    activities: createUsageActivities({ pg: createPool(config.databaseUrl, 4), clickhouse: createClickHouse(config), config }),
  });
  const client = new Client({ connection, namespace: config.temporalNamespace });
  await startUsageFlush(client, BENCH_TASK_QUEUE, { workflowId: 'usage-flush-bench' });
  const running = worker.run();
  process.send?.('ready');
  await running;
}

if (require.main === module) {
  // A clean exit on SIGTERM also lets --cpu-prof write its profile.
  process.on('SIGTERM', () => process.exit(0));
  const config = JSON.parse(process.env.HANGAR_BENCH_CONFIG ?? '{}') as HangarConfig;
  const role = process.argv[2];
  const run = isManagementWorker() ? serveInWorker(config) : role === 'api' ? runApi(config).then(() => process.send?.('ready')) : runFlush(config);
  run.catch((err) => {
    console.error(`bench ${role} process failed: ${(err as Error).stack}`);
    process.exit(1);
  });
}
