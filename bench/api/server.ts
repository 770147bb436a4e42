import Fastify from 'fastify';
import fs from 'node:fs';
import path from 'node:path';
import { buildApp } from '../../api/app';
import type { HangarConfig } from '../../domain/config';

/**
 * The measured server, in its own process as in a deployment (so the load generator does not
 * share its event loop): the base_url app on basePort and, as the framework floor, a bare Fastify
 * app with one constant route on runPort. Started by index.ts with `fork`, configured through
 * HANGAR_BENCH_CONFIG; reports 'ready' over IPC and ends with its parent.
 */
export const FLOOR_PATH = '/hello';

async function main(config: HangarConfig): Promise<void> {
  // Request logging (BENCH_LOG_LEVEL) goes to a file: measured with the cost of writing it, not
  // of a terminal.
  const logStream = config.logLevel ? fs.createWriteStream(path.join(config.dataDir, 'bench-api.log'), { flags: 'w' }) : undefined;
  const app = await buildApp(config, { logLevel: config.logLevel || undefined, logStream });
  await app.listen({ host: '127.0.0.1', port: config.basePort });

  const floor = Fastify();
  floor.get(FLOOR_PATH, async () => ({ hello: 'world' }));
  await floor.listen({ host: '127.0.0.1', port: config.runPort });
  process.send?.('ready');
}

if (require.main === module) {
  // A clean exit (SIGTERM, or the parent gone) also lets --cpu-prof write its profile.
  process.on('SIGTERM', () => process.exit(0));
  process.on('SIGINT', () => undefined);
  process.on('disconnect', () => process.exit(0));
  main(JSON.parse(process.env.HANGAR_BENCH_CONFIG ?? '{}') as HangarConfig).catch((err) => {
    console.error(`bench api server failed: ${(err as Error).stack}`);
    process.exit(1);
  });
}
