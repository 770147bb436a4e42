import fs from 'node:fs';
import path from 'node:path';
import { credentialsPath, type BootstrapCredentials } from '../store/bootstrap';
import { loadConfig, type HangarConfig } from '../domain/config';
import { apiHealthy, platformEnv, selectedProcesses } from './platform-processes';
import { prepare } from './prepare';
import type { Stack } from './stack';
import { repoRoot } from './stack/binaries';
import type { ServiceEvent } from './stack/service-supervisor';
import { waitUntilReady } from './stack/readiness';
import { maskPassword } from './stack/urls';
import { superviseChild, type SupervisedChild } from './supervised-child';

/**
 * `npm start`: prepare (local services, both schemas, the first account), then the platform processes,
 * supervised until Ctrl-C (or SIGTERM), which stops everything in order: platform processes
 * first, then the services.
 */
const began = Date.now();
const elapsed = () => `${((Date.now() - began) / 1000).toFixed(1).padStart(5)}s`;
const step = (line: string) => console.log(`[${elapsed()}] ${line}`);

const HEALTH_TIMEOUT_MS = 90_000;

function printSummary(config: HangarConfig, stack: Stack, credentials: BootstrapCredentials): void {
  const credentialsFile = credentialsPath(config);
  const relative = (file: string) => path.relative(process.cwd(), file) || file;
  const rows: [string, string][] = [
    ['base_url', `${config.baseUrl} (${config.apiProcesses} process${config.apiProcesses === 1 ? '' : 'es'}, HANGAR_API_PROCESSES)`],
    ['console', `${config.baseUrl}/console/`],
    ['run_url', config.runUrl],
    ['sandbox_url', config.sandboxUrlTemplate],
    ['sandbox_network', config.sandboxNetwork ? `subnet ${config.sandboxSubnet} (HANGAR_SANDBOX_SUBNET), egress by spec.network` : 'off (HANGAR_SANDBOX_NETWORK): loopback only'],
    ['temporal_ui', stack.temporalUiUrl ?? `(external Temporal at ${stack.temporalAddress})`],
    ['temporal', `${stack.temporalAddress} namespace ${config.temporalNamespace}`],
    ['postgres', maskPassword(stack.databaseUrl)],
    ['clickhouse', `${maskPassword(stack.clickhouseUrl)} database ${stack.clickhouseDatabase}`],
    ['account_id', credentials.accountId],
    ['workspace', credentials.workspace],
    // The key itself stays in the 0600 file, out of terminal scrollback and CI logs.
    ['api_key', `${credentials.apiKey.slice(0, 8)}... (full key in ${relative(credentialsFile)})`],
    ['service logs', relative(config.dataDir) + '/{postgres,clickhouse/log,temporal}/'],
  ];
  const width = Math.max(...rows.map(([key]) => key.length)) + 2;
  console.log(`\nHangar is running (started in ${elapsed().trim()})`);
  for (const [key, value] of rows) console.log(`  ${key.padEnd(width)}${value}`);
  console.log(`\n  export HANGAR_API_KEY=$(node -p "require('./${relative(credentialsFile)}').apiKey")`);
  console.log(`  curl -H "Authorization: Bearer $HANGAR_API_KEY" ${config.baseUrl}/v0/workspaces\n`);
  console.log('Press Ctrl-C to stop.');
}

async function main(): Promise<void> {
  const config = loadConfig();
  const processes = selectedProcesses();
  step(`data folder ${config.dataDir}`);
  const children: SupervisedChild[] = [];
  let stack: Stack | undefined;
  let shuttingDown = false;
  const shutdown = async (reason: string, exitCode: number) => {
    if (shuttingDown) {
      // A second Ctrl-C: leave at once; the parent-death signal still stops every child.
      process.exit(1);
    }
    shuttingDown = true;
    step(`${reason}: stopping`);
    await Promise.allSettled(children.map((child) => child.stop()));
    // Before prepare returns there is nothing to call stop() on; exiting lets the
    // parent-death signal stop whatever had started.
    await stack?.stop();
    step('stopped');
    process.exit(exitCode);
  };
  process.on('SIGINT', () => void shutdown('SIGINT', 0));
  process.on('SIGTERM', () => void shutdown('SIGTERM', 0));
  // A service that died is restarted (scripts/stack/service-supervisor.ts) while the platform
  // processes keep serving what does not need it; only one that keeps dying stops everything.
  const onServiceEvent = (event: ServiceEvent) => {
    console.error(`[${elapsed()}] [stack] ${event.message}`);
    if (event.kind === 'gave-up') void shutdown(`${event.service} keeps dying`, 1);
  };
  const prepared = await prepare(config, step, { onServiceEvent });
  stack = prepared.stack;
  const { credentials } = prepared;

  try {
    const root = repoRoot();
    const env = platformEnv(config, stack);
    for (const { name, script } of processes) {
      const file = path.join(root, script);
      if (!fs.existsSync(file)) throw new Error(`${script} does not exist: run npm run build`);
      children.push(superviseChild({ name, argv: [process.execPath, file], env, cwd: root, output: (line) => console.log(line), log: step }));
      step(`${name} started`);
    }
    if (processes.some((process) => process.name === 'api')) {
      await waitUntilReady(`the API at ${config.baseUrl}`, () => apiHealthy(config.baseUrl), { timeoutMs: HEALTH_TIMEOUT_MS, intervalMs: 500 });
      step('API healthy');
      printSummary(config, stack, credentials);
    } else {
      console.log(`\nHangar is running ${processes.map((process) => process.name).join(', ')} (HANGAR_PROCESSES) as node '${config.nodeId}'; hangar node list shows it.\nPress Ctrl-C to stop.`);
    }
  } catch (err) {
    console.error(`hangar failed to start: ${(err as Error).message}`);
    await shutdown('start failed', 1);
  }
}

main().catch((err) => {
  console.error(`hangar failed to start: ${(err as Error).message}`);
  process.exit(1);
});
