import fs from 'node:fs';
import path from 'node:path';
import { startStack, type Stack } from '../../scripts/stack';
import { applySchemas } from '../../scripts/stack/schema';
import { listTestFiles, onlyUnitTestsSelected, type JestSelection } from './selection';
import type { TestStack } from './stack';
import { stackFilePath, testConfig, testWorkflowBundleFile } from './test-config';
import { writeWorkflowBundle } from '../../workers/workflow-bundle';
import { DebianBaseImage } from '../../runtime/base-image';
import { OciImageStore } from '../../runtime/image-store';

declare global {
  // Handed from the global set-up to the global teardown (jest runs both in its main process).
  var __HANGAR_TEST_STACK__: Stack | undefined;
  // The build of base-image the set-up started, awaited by the teardown.
  var __HANGAR_BASE_IMAGE_BUILD__: Promise<unknown> | undefined;
}

const log = (line: string) => process.stderr.write(`[test stack] ${line}\n`);

/**
 * Starts the services for the test run (their data in .data-test, their own ports), applies both
 * schemas and records the URLs for testStack(). HANGAR_TEST_KEEP_STACK=1 leaves the services
 * running afterwards and reuses them next time, for quick repeated runs.
 */
export default async function globalSetup(globalConfig: JestSelection): Promise<void> {
  const config = testConfig();
  const stackFile = stackFilePath(config);
  fs.rmSync(stackFile, { force: true });
  const testFiles = listTestFiles(path.join(globalConfig.rootDir, 'test'));
  if (onlyUnitTestsSelected(globalConfig, testFiles)) {
    log('only unit tests selected: the services are not started');
    return;
  }
  const began = Date.now();
  // Bundled once for the whole run while the services start; control workers start from it.
  fs.mkdirSync(config.dataDir, { recursive: true });
  const bundling = writeWorkflowBundle(testWorkflowBundleFile(config));
  bundling.catch(() => undefined); // awaited below; a failed stack start must not leave it unhandled
  const baseImage = buildBaseImage(config.dataDir);
  globalThis.__HANGAR_BASE_IMAGE_BUILD__ = baseImage;
  const keepRunning = process.env.HANGAR_TEST_KEEP_STACK === '1';
  // Another test run on the same folder finishes first: its services are not ours to stop.
  const stack = await startStack(config, log, { keepRunning, fastWrites: true, lockWaitMs: 15 * 60_000, onServiceEvent: (event) => log(event.message) });
  try {
    await applySchemas(stack);
    await bundling;
    // base-image is the default image: every test that starts a sandbox (through the API, a
    // workload, a job, or a warm pool) would otherwise wait for its first build within its own
    // time limit. Built once per data folder: a later run finds it at once.
    await baseImage;
  } catch (err) {
    await stack.stop();
    throw err;
  }
  const recorded: TestStack = {
    config,
    databaseUrl: stack.databaseUrl,
    clickhouseUrl: stack.clickhouseUrl,
    clickhouseDatabase: stack.clickhouseDatabase,
    temporalAddress: stack.temporalAddress,
  };
  fs.writeFileSync(stackFile, JSON.stringify(recorded, null, 2) + '\n', { mode: 0o600 });
  globalThis.__HANGAR_TEST_STACK__ = stack;
  log(`ready in ${((Date.now() - began) / 1000).toFixed(1)}s${keepRunning ? ' (kept running after the tests)' : ''}`);
}

/**
 * Builds base-image into the run's data folder, as a node builds it at its start, while the
 * services start: once per data folder (a later run finds it). A failed build is logged: the
 * tests' nodes then try again on first need, behind the build's file lock (runtime/base-image.ts).
 */
async function buildBaseImage(dataDir: string): Promise<void> {
  const store = new OciImageStore({ root: path.join(dataDir, 'images', 'oci') });
  const began = Date.now();
  const image = new DebianBaseImage({ store, workDir: path.join(dataDir, 'images', 'base-image') });
  try {
    if (await image.find()) return;
    const built = await image.ensure();
    log(`base-image built in ${((Date.now() - began) / 1000).toFixed(1)}s (${built.digest})`);
  } catch (err) {
    log(`base-image could not be built: ${(err as Error).message}`);
  }
}
