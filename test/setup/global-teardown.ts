import fs from 'node:fs';
import { stackFilePath, testConfig } from './test-config';

/** Stops the services the global set-up started (none when it kept or reused them). */
export default async function globalTeardown(): Promise<void> {
  const stack = globalThis.__HANGAR_TEST_STACK__;
  if (!stack) return;
  globalThis.__HANGAR_TEST_STACK__ = undefined;
  if (process.env.HANGAR_TEST_KEEP_STACK !== '1') fs.rmSync(stackFilePath(testConfig()), { force: true });
  await stack.stop();
}
