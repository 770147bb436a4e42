import fs from 'node:fs';
import { stackFilePath, testConfig } from './test-config';

/** Stops the services the global set-up started (none when it kept or reused them). */
export default async function globalTeardown(): Promise<void> {
  // A build cut short would only be made again by the next run.
  await globalThis.__HANGAR_BASE_IMAGE_BUILD__;
  const stack = globalThis.__HANGAR_TEST_STACK__;
  if (!stack) return;
  globalThis.__HANGAR_TEST_STACK__ = undefined;
  if (process.env.HANGAR_TEST_KEEP_STACK !== '1') fs.rmSync(stackFilePath(testConfig()), { force: true });
  await stack.stop();
}
