import fs from 'node:fs';
import type { HangarConfig } from '../../domain/config';
import { stackFilePath, testConfig } from './test-config';

/** The services the jest global set-up started (or found) for this test run. */
export interface TestStack {
  config: HangarConfig;
  databaseUrl: string;
  clickhouseUrl: string;
  clickhouseDatabase: string;
  temporalAddress: string;
}

let cached: TestStack | undefined;

export function testStack(): TestStack {
  if (cached) return cached;
  const file = stackFilePath(testConfig());
  if (!fs.existsSync(file)) {
    throw new Error(
      `no test stack (${file} is missing): run tests through jest with the global set-up (npm test); ` +
        'a run that selects only test/unit files does not start the services',
    );
  }
  cached = JSON.parse(fs.readFileSync(file, 'utf8')) as TestStack;
  return cached;
}
