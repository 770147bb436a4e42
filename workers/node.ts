import { Client, Connection } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { createNodeActivities } from '../activities/node-activities';
import { captureOnRequest } from '../activities/snapshot-node';
import { ensureNodeBaseImage } from '../activities/node-base-image';
import { NodeImageStore } from '../store/node-images';
import { createPool } from '../store/postgres-pool';
import { temporalAddress } from '../domain/config';
import { loadConfig, nodeTaskQueue } from '../domain/config';
import { PlatformServices } from '../runtime/platform-services/platform-services';
import { BwrapRuntime } from '../runtime/bwrap-runtime';
import { NodeHeartbeat } from '../runtime/node-heartbeat';
import { removeAbandonedSandboxes } from '../runtime/abandoned-sandboxes';
import { removeOrphanedSnapshotFiles } from '../runtime/orphaned-snapshots';
import { NodeListener } from '../runtime/node-listener';
import { nodeCredentialKey } from '../domain/nodes/node-credential';
import { loadMasterKey } from '../store/master-key';
import { removeMovedJobSandboxes } from '../runtime/moved-job-sandboxes';
import { removeMovedRevisionInstances } from '../runtime/moved-revision-instances';
import { SandboxNetwork } from '../runtime/network/sandbox-network';
import { refusalReporter } from '../runtime/network/refusal-events';
import { TrafficRecorder } from '../runtime/network/traffic-recorder';
import { NodeListenerAddresses } from '../runtime/network/node-listener-addresses';
import { PortEventRelay } from '../runtime/port-event-relay';
import { VolumeStore } from '../runtime/volume-store';
import { connectToTemporal } from './connect';
import { portCallbackStarter } from './port-callback-starter';

/**
 * The runtime worker of one node: runs the activities that touch this machine's sandboxes,
 * deployments and job tasks from its own task queue, and relays the ports its sandboxes report
 * to durable callback deliveries (their POSTs leave from this host). Sandboxes are not its
 * children: they keep running while it restarts, and the runtime finds them again on disk.
 */
async function main() {
  const config = loadConfig();
  const connection = await connectToTemporal(temporalAddress(config));
  const temporal = new Client({ connection: await Connection.connect({ address: temporalAddress(config) }), namespace: config.temporalNamespace });
  const pg = createPool(config.databaseUrl);
  const listeners = config.sandboxNetwork ? new NodeListenerAddresses(pg, (err) => console.error(`node listener addresses: ${err.message}`)) : undefined;
  await listeners?.start();
  const traffic = config.sandboxNetwork ? new TrafficRecorder(pg) : undefined;
  const network = config.sandboxNetwork
    ? new SandboxNetwork({
        dataDir: config.dataDir,
        subnet: config.sandboxSubnet,
        onRefused: refusalReporter(pg),
        onTraffic: traffic?.record,
        allowedPrivateRanges: config.sandboxAllowedPrivateRanges,
        nodeListeners: () => listeners?.blocks() ?? [],
      })
    : undefined;
  await network?.start();
  const runtime = new BwrapRuntime({ dataDir: config.dataDir, warmPool: config.sandboxWarmPool, network, cgroup: { name: config.sandboxCgroupName } });
  const volumes = new VolumeStore({ dataDir: config.dataDir });
  const heartbeat = NodeHeartbeat.forNode(config, pg, () => runtime.list(), (line) => console.error(line));
  const removed = await removeMovedJobSandboxes(runtime, pg, config.nodeId);
  if (removed.length > 0) console.log(`removed the sandboxes of ${removed.length} job executions that ended or moved to another node meanwhile`);
  // Sandboxes written off while this node was LOST: never run again.
  const abandoned = await removeAbandonedSandboxes(runtime, pg, config.nodeId);
  if (abandoned.length > 0) console.log(`removed ${abandoned.length} sandboxes written off while this node was lost`);
  const orphanedSnapshots = await removeOrphanedSnapshotFiles(runtime, pg, config.dataDir);
  if (orphanedSnapshots.length > 0) console.log(`removed the files of ${orphanedSnapshots.length} snapshots that no longer exist`);
  // Workload instances whose revision moved to another node while this one was LOST: never two serving copies.
  const movedInstances = await removeMovedRevisionInstances(runtime, pg, config.nodeId, config.dataDir);
  if (movedInstances.length > 0) console.log(`removed ${movedInstances.length} workload instances whose revision moved to another node meanwhile`);
  // Listening before the heartbeat advertises it: a gateway that reads the URL finds it answering.
  const listener = config.nodeListen
    ? new NodeListener({ nodeId: config.nodeId, key: nodeCredentialKey(loadMasterKey(config)), dataDir: config.dataDir, sandboxes: runtime, listen: config.nodeListen })
    : undefined;
  await listener?.start();
  await heartbeat.start();
  const platform = await PlatformServices.forNode(config, pg);
  const worker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: nodeTaskQueue(config),
    activities: createNodeActivities({ config, runtime, volumes, pg, platform, temporal }),
  });
  const snapshotRequests = await captureOnRequest({ runtime, pg, nodeQueue: nodeTaskQueue(config), log: (line) => console.error(line) });
  // Delivery workflows run on the control queue; their POSTs run here, on the sandbox's host.
  const relay = new PortEventRelay({
    dataDir: config.dataDir,
    startDelivery: portCallbackStarter(temporal, config.taskQueue, {
      activityTaskQueue: nodeTaskQueue(config),
      giveUpAfterMs: config.callbackGiveUpSeconds * 1000,
    }),
    onError: (sandboxId, err) => console.error(`port event relay, sandbox ${sandboxId}: ${err.message}`),
  });
  relay.start();
  // base-image, the default image, is built now rather than when the first sandbox needs it (which
  // then waits on this same build); the warm pool, on it, fills once it is on the node.
  void ensureNodeBaseImage(runtime, { store: new NodeImageStore(pg), nodeId: config.nodeId })
    .then(
      () => undefined,
      (err: Error) => console.error(`base-image could not be built: ${err.message}`),
    )
    .then(() => runtime.prewarm())
    .catch((err: Error) => console.error(`sandbox warm pool: ${err.message}`));
  console.log(`hangar node worker '${config.nodeId}': polling task queue '${nodeTaskQueue(config)}'`);
  try {
    await worker.run();
  } finally {
    await heartbeat.stop();
    await snapshotRequests.close();
    await listener?.close();
    await relay.close();
    await platform.closeAll();
    await network?.close();
    listeners?.stop();
    await traffic?.close();
    await Promise.allSettled([runtime.close(), pg.end(), temporal.connection.close(), connection.close()]);
  }
}

main().catch((err) => {
  console.error(`hangar node worker failed: ${(err as Error).message}`);
  process.exit(1);
});
