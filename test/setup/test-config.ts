import path from 'node:path';
import { loadConfig, type HangarConfig } from '../../domain/config';
import { repoRoot } from '../../scripts/stack/binaries';

/**
 * Tests run on their own data folder and ports, so that they can run while `npm start` runs.
 * HANGAR_TEST_PORT_OFFSET shifts every port and HANGAR_TEST_DATA_DIR moves the folder, for two
 * independent test runs on one machine. HANGAR_TEST_DATABASE_URL, HANGAR_TEST_CLICKHOUSE_URL and
 * HANGAR_TEST_TEMPORAL_ADDRESS point the tests at external services instead.
 */
export const TEST_PORTS = {
  HANGAR_POSTGRES_PORT: 55433,
  HANGAR_CLICKHOUSE_HTTP_PORT: 18124,
  HANGAR_CLICKHOUSE_TCP_PORT: 19001,
  HANGAR_TEMPORAL_PORT: 17233,
  HANGAR_TEMPORAL_UI_PORT: 18233,
  HANGAR_BASE_PORT: 18080,
  HANGAR_RUN_PORT: 18081,
  HANGAR_SANDBOX_PORT: 18082,
} as const;

export function testConfig(env: NodeJS.ProcessEnv = process.env): HangarConfig {
  const offset = Number(env.HANGAR_TEST_PORT_OFFSET || 0);
  if (!Number.isInteger(offset) || offset < 0) throw new Error(`HANGAR_TEST_PORT_OFFSET must be a non-negative integer, got '${env.HANGAR_TEST_PORT_OFFSET}'`);
  const ports = Object.fromEntries(Object.entries(TEST_PORTS).map(([name, port]) => [name, String(port + offset)]));
  // Built from scratch rather than from process.env: a developer's own HANGAR_* or DATABASE_URL
  // settings for `npm start` must not leak into the tests.
  return loadConfig({
    ...ports,
    HANGAR_DATA_DIR: path.resolve(repoRoot(), env.HANGAR_TEST_DATA_DIR || '.data-test'),
    // Away from npm start's default (10.200.0.0/16), the test files' own networks (10.201-248,
    // test-internet.ts) and the benchmarks' (10.250), and one per port offset.
    HANGAR_SANDBOX_SUBNET: `10.252.${(Math.floor(offset / 100) % 16) * 16}.0/20`,
    HANGAR_LOG_LEVEL: env.HANGAR_TEST_LOG_LEVEL || 'warn',
    DATABASE_URL: env.HANGAR_TEST_DATABASE_URL,
    CLICKHOUSE_URL: env.HANGAR_TEST_CLICKHOUSE_URL,
    TEMPORAL_ADDRESS: env.HANGAR_TEST_TEMPORAL_ADDRESS,
  });
}

/** Where the global set-up records the running test stack. */
export function stackFilePath(config: HangarConfig): string {
  return path.join(config.dataDir, 'stack.json');
}

/** The workflow bundle the global set-up makes once per run (from the sources under test). */
export function testWorkflowBundleFile(config: HangarConfig): string {
  return path.join(config.dataDir, 'workflows.bundle.js');
}
