import path from 'node:path';
import { loadConfig, type HangarConfig } from '../../domain/config';
import { repoRoot } from '../../scripts/stack/binaries';

/**
 * The API benchmark's own data folder and ports, apart from `npm start` (.data, defaults), the
 * tests (.data-test) and the billing benchmark (.data-bench, defaults + 300), so it can run beside
 * any of them. Built from scratch, not from process.env: a developer's HANGAR_* settings for
 * `npm start` must not move the benchmark onto a live installation.
 */
export const BENCH_API_PORTS = {
  HANGAR_POSTGRES_PORT: 55533,
  HANGAR_CLICKHOUSE_HTTP_PORT: 18224,
  HANGAR_CLICKHOUSE_TCP_PORT: 19101,
  HANGAR_TEMPORAL_PORT: 17333,
  HANGAR_TEMPORAL_UI_PORT: 18333,
  HANGAR_BASE_PORT: 18180,
  /** The bare Fastify floor listens here (the run_url listener is not part of this benchmark). */
  HANGAR_RUN_PORT: 18181,
  HANGAR_SANDBOX_PORT: 18182,
} as const;

export function benchApiConfig(env: NodeJS.ProcessEnv = process.env): HangarConfig {
  const config = loadConfig({
    ...Object.fromEntries(Object.entries(BENCH_API_PORTS).map(([name, port]) => [name, String(port)])),
    // Inside the already ignored .data-bench, with its own lock: the billing benchmark's stack
    // lives in .data-bench itself.
    HANGAR_DATA_DIR: path.resolve(repoRoot(), env.BENCH_DATA_DIR || path.join('.data-bench', 'api')),
  });
  // No request logging unless asked for: loadConfig's default ('info') logs every request twice.
  return { ...config, logLevel: env.BENCH_LOG_LEVEL || '' };
}
