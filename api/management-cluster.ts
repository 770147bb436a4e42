import cluster, { type Worker } from 'node:cluster';
import type { FastifyInstance } from 'fastify';
import type { HangarConfig } from '../domain/config';
import { buildApp } from './app';

/** What stops the management API, however many processes serve it. */
export interface ManagementApi {
  close(): Promise<void>;
}

/** Where the primary reports a process it had to replace. */
export type ProcessLog = (detail: object, message: string) => void;

/**
 * Serves the management API (base_url) in `config.apiProcesses` processes sharing its port
 * (node:cluster). It keeps no state between requests (PostgreSQL holds it; every process signs
 * and checks tokens with the same keys), so more processes simply use more cores: ingestion of
 * usage events, for one, is bound by the CPU of a single process otherwise. With one process it
 * runs in the calling one. A process that dies is replaced. The calling script must hand its
 * cluster workers to serveInWorker.
 */
export async function startManagementApi(config: HangarConfig, logError: ProcessLog): Promise<ManagementApi> {
  if (config.apiProcesses <= 1) {
    const app = await listenOnBaseUrl(config);
    return { close: () => app.close() };
  }
  let closing = false;
  cluster.setupPrimary({ execArgv: [...process.execArgv, ...MANAGEMENT_PROCESS_V8_FLAGS] });
  const fork = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const worker = cluster.fork();
      let listening = false;
      worker.once('listening', () => {
        listening = true;
        resolve();
      });
      worker.once('exit', (code, signal) => {
        if (!listening) return reject(new Error(`a management API process exited before listening (${signal ?? `code ${code}`})`));
        if (closing) return;
        logError({ code, signal }, 'a management API process exited; starting another');
        fork().catch((err) => logError({ err }, 'could not replace a management API process'));
      });
    });
  await Promise.all(Array.from({ length: config.apiProcesses }, fork));
  return {
    async close() {
      closing = true;
      const alive = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined && !worker.isDead());
      await Promise.all(
        alive.map(
          (worker) =>
            new Promise<void>((resolve) => {
              worker.once('exit', () => resolve());
              // Each process finishes its in-flight requests, then exits (see serveInWorker).
              worker.process.kill('SIGTERM');
            }),
        ),
      );
    },
  };
}

/**
 * V8 settings of the processes forked to serve base_url. What an ingestion request allocates
 * lives while it waits on the database (tens of milliseconds), so it outlives young-generation
 * collections and dies in the old generation. With V8's default starting limit for that, a
 * process ran a full collection every 300 ms or so under load; with 256 MB it ran none in a
 * 2-million-event run (API CPU per event 5.8 us before, 4.2 after).
 */
export const MANAGEMENT_PROCESS_V8_FLAGS = ['--initial-old-space-size=256'];

/** The body of a management API process forked by startManagementApi. */
export async function serveInWorker(config: HangarConfig): Promise<void> {
  const app = await listenOnBaseUrl(config);
  const stop = async () => {
    await app.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
  // The primary is gone (crashed or killed): nothing would hand this process connections.
  process.once('disconnect', () => void stop());
}

async function listenOnBaseUrl(config: HangarConfig): Promise<FastifyInstance> {
  const app = await buildApp(config, { logLevel: config.logLevel });
  await app.listen({ host: config.host, port: config.basePort });
  return app;
}

export const isManagementWorker = () => cluster.isWorker;
