import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { HangarConfig } from '../../domain/config';
import { shareSuiteImages, testRuntime } from './sandbox-runtime';
import type { RunningWorker } from './workers';

/**
 * A runtime node of the platform in the test's own process: its id, its own data folder and
 * runtime, and its worker while it runs. Several of them stand for several machines where the
 * network between them does not matter (test/helpers/second-node.ts is a second host).
 */
export interface InProcessNode {
  id: string;
  config: HangarConfig;
  runtime: ReturnType<typeof testRuntime>;
  worker?: RunningWorker;
}

/**
 * Node `id` of the platform `config` describes, in a data folder of its own named from `prefix`,
 * sharing the suite's node image store: base-image, the default image, is built there, as a
 * node's worker builds it at its start.
 */
export function inProcessNode(config: HangarConfig, id: string, prefix: string): InProcessNode {
  // Short: a sandbox's socket path (<dataDir>/sandboxes/job-<uuid>/api/agent.sock) must fit in 107 bytes.
  const dataDir = shareSuiteImages(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  return { id, config: { ...config, nodeId: id, dataDir }, runtime: testRuntime(dataDir) };
}

/** Stops the node's worker, removes its sandboxes, closes its runtime and removes its folder. */
export async function removeInProcessNode(node: InProcessNode): Promise<void> {
  await node.worker?.stop();
  for (const sandbox of await node.runtime.list()) await node.runtime.remove(sandbox.id).catch(() => undefined);
  await node.runtime.close();
  // A volume a failed test left mounted keeps its folder busy: leave it to the system's tmp cleaning.
  try {
    fs.rmSync(node.config.dataDir, { recursive: true, force: true });
  } catch (err) {
    console.warn(`left ${node.config.dataDir}: ${(err as Error).message}`);
  }
}
