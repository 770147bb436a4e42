import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../domain/config';
import { isManagementWorker, serveInWorker, startManagementApi } from './management-cluster';
import { buildRunApp } from './gateway/run-app';
import { BwrapRuntime } from '../runtime/bwrap-runtime';
import { buildSandboxGatewayApp } from './gateway/sandbox-app';

/**
 * The API process: the management API on base_url (in HANGAR_API_PROCESSES processes, see
 * management-processes.ts), the inference gateway on run_url and the sandbox gateway, each on its
 * own listener. SIGINT/SIGTERM close them gracefully (in-flight requests finish).
 */
async function main() {
  const config = loadConfig();
  if (isManagementWorker()) return serveInWorker(config);
  const gateways: [string, FastifyInstance, number][] = [
    ['run_url', await buildRunApp(config, { logLevel: config.logLevel }), config.runPort],
    [
      'sandbox gateway',
      await buildSandboxGatewayApp(config, new BwrapRuntime({ dataDir: config.dataDir }), { logLevel: config.logLevel }),
      config.sandboxPort,
    ],
  ];
  const log = gateways[0][1].log;
  const management = await startManagementApi(config, (detail, message) => log.error(detail, message));
  for (const [, app, port] of gateways) await app.listen({ host: config.host, port });

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'shutting down');
    await Promise.allSettled([management.close(), ...gateways.map(([, app]) => app.close())]);
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((err) => {
  console.error(`hangar api failed to start: ${(err as Error).message}`);
  process.exit(1);
});
