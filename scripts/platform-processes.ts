import path from 'node:path';
import type { HangarConfig } from '../domain/config';
import type { Stack } from './stack';

/** The platform processes, as compiled by tsc (install-deps.sh builds them). */
export const PLATFORM_PROCESSES = [
  { name: 'api', script: path.join('dist', 'api', 'server.js') },
  { name: 'control-worker', script: path.join('dist', 'workers', 'control.js') },
  { name: 'node-worker', script: path.join('dist', 'workers', 'node.js') },
] as const;

export type PlatformProcessName = (typeof PLATFORM_PROCESSES)[number]['name'];

/**
 * The platform processes this host runs: all of them, or those `HANGAR_PROCESSES` names
 * (comma-separated), so that another machine pointed at the same services runs only a node
 * worker (`HANGAR_PROCESSES=node-worker`): that is how a node is added.
 */
export function selectedProcesses(env: NodeJS.ProcessEnv = process.env): (typeof PLATFORM_PROCESSES)[number][] {
  const raw = env.HANGAR_PROCESSES?.trim();
  if (!raw) return [...PLATFORM_PROCESSES];
  const names = raw.split(',').map((name) => name.trim());
  const known = PLATFORM_PROCESSES.map((process) => process.name as string);
  const unknown = names.filter((name) => !known.includes(name));
  if (unknown.length) throw new Error(`HANGAR_PROCESSES: unknown process ${unknown.map((name) => `'${name}'`).join(', ')} (known: ${known.join(', ')})`);
  return PLATFORM_PROCESSES.filter((process) => names.includes(process.name));
}

/** The environment of a platform process: `base` pointed at the stack's services. */
export function platformEnv(config: HangarConfig, stack: Stack, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return {
    ...base,
    HANGAR_DATA_DIR: config.dataDir,
    DATABASE_URL: stack.databaseUrl,
    CLICKHOUSE_URL: stack.clickhouseUrl,
    CLICKHOUSE_DATABASE: stack.clickhouseDatabase,
    TEMPORAL_ADDRESS: stack.temporalAddress,
    TEMPORAL_NAMESPACE: config.temporalNamespace,
    // The UI of the Temporal it started, for the console's workflow links; with an external Temporal, whatever the caller set.
    ...(stack.temporalUiUrl ? { HANGAR_TEMPORAL_UI_URL: stack.temporalUiUrl } : {}),
  };
}

/** Resolves when `GET {baseUrl}/health` answers 200 (a listener of the API process is up). */
export async function apiHealthy(baseUrl: string): Promise<void> {
  const response = await fetch(new URL('/health', baseUrl), { signal: AbortSignal.timeout(5_000) });
  if (response.status !== 200) throw new Error(`GET /health answered ${response.status}: ${(await response.text()).slice(0, 200)}`);
}
