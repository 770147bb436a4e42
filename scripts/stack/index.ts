import type { HangarConfig } from '../../domain/config';
import { SERVICE_RESTART_POLICY, type RestartPolicy } from '../restart-policy';
import { prepareExternalClickHouse, startLocalClickHouse } from './clickhouse';
import { notStarted, type LaunchContext, type StartedService } from './local-service';
import { startLocalPostgres, waitForExternalPostgres } from './postgres';
import { servicePasswords, type ServicePasswords } from './service-passwords';
import { lockDataDir } from './stack-lock';
import type { ServiceEvent } from './service-supervisor';
import { prepareExternalTemporal, startLocalTemporal } from './temporal';

export interface Stack {
  /** postgres://... of database 'hangar'. */
  databaseUrl: string;
  /** http://user:pass@127.0.0.1:port/ ; database `clickhouseDatabase` exists. */
  clickhouseUrl: string;
  clickhouseDatabase: string;
  /** host:port */
  temporalAddress: string;
  /** Only when Temporal was started locally. */
  temporalUiUrl?: string;
  /** Stops what this call started (not external or adopted services), cleanly. Idempotent. */
  stop(): Promise<void>;
}

export interface StackOptions {
  /**
   * Leave the services this call starts running after this process ends (stop() then only
   * releases the data folder), and adopt healthy ones an earlier such run left. For quick
   * repeated test runs; never for `npm start`, whose services must die with it.
   */
  keepRunning?: boolean;
  /** PostgreSQL without fsync: for throw-away test data only. */
  fastWrites?: boolean;
  /** Bound on waiting for each service, local or external. The Temporal dev server is slow on 2 cores. */
  readyTimeoutMs?: number;
  /** How long to wait when another supervisor holds the data folder (0: fail at once). */
  lockWaitMs?: number;
  /**
   * Told when a service started here dies on its own (crash, OOM kill) after it was ready, when it
   * is back after a restart, and when it is given up (then the caller should stop).
   */
  onServiceEvent?: (event: ServiceEvent) => void;
  /** How services started here are restarted (SERVICE_RESTART_POLICY by default); none with keepRunning. */
  restartPolicy?: RestartPolicy;
}

const DEFAULT_READY_TIMEOUT_MS = 120_000;

/**
 * Starts PostgreSQL, ClickHouse and Temporal (in parallel, data under config.dataDir, reused on
 * the next start), or waits for the external ones the configuration names. On any failure
 * whatever was started is stopped again and the error names every service that failed.
 */
export async function startStack(config: HangarConfig, log: (line: string) => void = () => undefined, options: StackOptions = {}): Promise<Stack> {
  const release = await lockDataDir(config.dataDir, { waitMs: options.lockWaitMs ?? 0, log });
  const keep = options.keepRunning ?? false;
  const ctx: LaunchContext = {
    log,
    bindToParent: !keep,
    reuseRunning: keep,
    readyTimeoutMs: options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS,
    // Services kept running outlive this process, so it cannot watch them; the next start adopts or replaces them.
    restartPolicy: keep ? undefined : (options.restartPolicy ?? SERVICE_RESTART_POLICY),
    onServiceEvent: options.onServiceEvent,
  };
  const started: StartedService[] = [];
  const timed = async <T extends { service: StartedService }>(name: string, start: () => Promise<T>): Promise<T> => {
    const began = Date.now();
    const result = await start();
    started.push(result.service);
    log(`${name} ready (${((Date.now() - began) / 1000).toFixed(1)}s)`);
    return result;
  };

  let passwords: ServicePasswords | undefined;
  try {
    if (!config.databaseUrl || !config.clickhouseUrl) passwords = servicePasswords(config.dataDir);
  } catch (err) {
    release();
    throw err;
  }
  const { dataDir } = config;

  const postgres = config.databaseUrl
    ? timed('postgres (external)', async () => {
        await waitForExternalPostgres(config.databaseUrl as string, ctx);
        return { url: config.databaseUrl as string, service: notStarted };
      })
    : timed('postgres', () => startLocalPostgres({ dataDir, port: config.postgresPort, password: passwords!.postgres, fastWrites: options.fastWrites ?? false }, ctx));
  const clickhouse = config.clickhouseUrl
    ? timed('clickhouse (external)', async () => {
        const database = await prepareExternalClickHouse(config.clickhouseUrl as string, config.clickhouseDatabase, ctx);
        return { url: config.clickhouseUrl as string, database, service: notStarted };
      })
    : timed('clickhouse', () =>
        startLocalClickHouse({ dataDir, httpPort: config.clickhouseHttpPort, tcpPort: config.clickhouseTcpPort, password: passwords!.clickhouse, database: config.clickhouseDatabase }, ctx),
      );
  const temporal = config.temporalAddress
    ? timed('temporal (external)', async () => {
        await prepareExternalTemporal(config.temporalAddress as string, config.temporalNamespace, ctx);
        return { address: config.temporalAddress as string, uiUrl: undefined, service: notStarted };
      })
    : timed('temporal', () => startLocalTemporal({ dataDir, port: config.temporalPort, uiPort: config.temporalUiPort, namespace: config.temporalNamespace }, ctx));

  const outcomes = await Promise.allSettled([postgres, clickhouse, temporal]);
  const failures = outcomes.flatMap((outcome, i) => (outcome.status === 'rejected' ? [`${['postgres', 'clickhouse', 'temporal'][i]}: ${(outcome.reason as Error)?.message ?? outcome.reason}`] : []));
  if (failures.length) {
    // Stop even in keep mode: a half-started stack is of no use to anyone.
    await Promise.allSettled(started.map((service) => service.stop()));
    release();
    throw new Error(`the local stack did not start:\n${failures.join('\n')}`);
  }
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      if (!keep) await Promise.allSettled(started.map((service) => service.stop()));
      release();
    })();
    return stopped;
  };
  // Every one fulfilled: awaiting them again only unwraps the values.
  const [pg, ch, tp] = [await postgres, await clickhouse, await temporal];
  return {
    databaseUrl: pg.url,
    clickhouseUrl: ch.url,
    clickhouseDatabase: ch.database,
    temporalAddress: tp.address,
    temporalUiUrl: tp.uiUrl,
    stop,
  };
}
