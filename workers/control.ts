import { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { createActivities } from '../activities/control-activities';
import { createClickHouse } from '../store/clickhouse-client';
import { createPool } from '../store/postgres-pool';
import { temporalAddress } from '../domain/config';
import { loadConfig } from '../domain/config';
import { connectToTemporal } from './connect';
import { workflowCode } from './workflow-bundle';
import { startSingletonWorkflows } from './singletons';

/**
 * The control-plane worker: runs Hangar's workflows (deployments, lifecycles, callbacks, usage
 * flush) on the control task queue. Temporal's runtime stops it gracefully on SIGINT/SIGTERM:
 * running activities finish or are retried elsewhere, workflows resume from history.
 */
async function main() {
  const config = loadConfig();
  const connection = await connectToTemporal(temporalAddress(config));
  const temporal = new Client({ connection, namespace: config.temporalNamespace });
  const pg = createPool(config.databaseUrl);
  const clickhouse = createClickHouse(config);
  const worker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    ...workflowCode(),
    activities: createActivities({ config, pg, clickhouse, temporal }),
  });
  await startSingletonWorkflows(temporal, config);
  console.log(`hangar worker: polling task queue '${config.taskQueue}' at ${temporalAddress(config)}`);
  try {
    await worker.run();
  } finally {
    await Promise.allSettled([pg.end(), clickhouse.close(), connection.close()]);
  }
}

main().catch((err) => {
  console.error(`hangar worker failed: ${(err as Error).message}`);
  process.exit(1);
});
