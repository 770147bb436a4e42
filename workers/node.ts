import { Worker } from '@temporalio/worker';
import { createSandboxNodeActivities } from '../activities/sandbox-node';
import { temporalAddress } from '../api/plugins/temporal';
import { loadConfig, nodeTaskQueue } from '../core/config';
import { BwrapRuntime } from '../runtime/bwrap-runtime';
import { connectToTemporal } from './connect';

/**
 * The runtime worker of one node: runs the activities that touch this machine's sandboxes
 * (start, standby, removal) from its own task queue. Sandboxes are not its children: they keep
 * running while it restarts, and the runtime finds them again from their state on disk.
 */
async function main() {
  const config = loadConfig();
  const connection = await connectToTemporal(temporalAddress(config));
  const runtime = new BwrapRuntime({ dataDir: config.dataDir });
  const worker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: nodeTaskQueue(config),
    activities: createSandboxNodeActivities({ runtime }),
  });
  console.log(`hangar node worker '${config.nodeId}': polling task queue '${nodeTaskQueue(config)}'`);
  try {
    await worker.run();
  } finally {
    await connection.close();
  }
}

main().catch((err) => {
  console.error(`hangar node worker failed: ${(err as Error).message}`);
  process.exit(1);
});
