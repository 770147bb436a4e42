import fs from 'node:fs';
import path from 'node:path';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { clickhouseServerCommand } from './binaries';
import { CLICKHOUSE_USER, clickhouseFolders, clickhouseServerConfig, clickhouseUsersConfig, type ClickHouseClusterMembership } from './clickhouse-config';
import { chooseIdentity, handOver, identityPrefix } from './identity';
import { runLocalService, type LaunchContext, type StartedService } from './local-service';
import { waitUntilReady } from './readiness';
import { clickhouseTarget, maskPassword, type ClickHouseTarget } from './urls';

async function withServer<T>(target: ClickHouseTarget, use: (client: ClickHouseClient) => Promise<T>): Promise<T> {
  const client = createClient({
    url: target.serverUrl,
    username: target.username,
    password: target.password,
    request_timeout: 10_000,
    // Refused connections are expected while the server starts; the probe reports what matters.
    log: { level: ClickHouseLogLevel.OFF },
  });
  try {
    return await use(client);
  } finally {
    await client.close();
  }
}

/** Answers an authenticated query: the server is up and the credentials are right. */
async function answers(target: ClickHouseTarget): Promise<void> {
  await withServer(target, (client) => client.command({ query: 'SELECT 1' }));
}

async function ensureDatabase(target: ClickHouseTarget): Promise<void> {
  // clickhouseTarget admits only plain identifiers, so the name is safe to splice in.
  await withServer(target, (client) => client.command({ query: `CREATE DATABASE IF NOT EXISTS ${target.database}` }));
}

export interface LocalClickHouseOptions {
  dataDir: string;
  httpPort: number;
  tcpPort: number;
  password: string;
  database: string;
  /** Folder under dataDir and name of the service ('clickhouse' unless several run). */
  name?: string;
  /** The server is a member of this cluster (the cluster test's servers). */
  cluster?: ClickHouseClusterMembership;
}

/**
 * Our own ClickHouse under `<dataDir>/clickhouse`, configured afresh on every start (ports and
 * password follow the configuration), with the configured database created.
 */
export async function startLocalClickHouse(
  options: LocalClickHouseOptions,
  ctx: LaunchContext,
): Promise<{ url: string; database: string; service: StartedService }> {
  const name = options.name ?? 'clickhouse';
  const dir = path.join(options.dataDir, name);
  fs.mkdirSync(dir, { recursive: true, mode: 0o750 });
  const identity = chooseIdentity('clickhouse', dir, ctx.log);
  const folders = Object.values(clickhouseFolders(dir));
  for (const folder of folders) fs.mkdirSync(folder, { recursive: true, mode: 0o750 });
  const configFile = path.join(dir, 'config.xml');
  const usersFile = path.join(dir, 'users.xml');
  fs.writeFileSync(configFile, clickhouseServerConfig({ dir, httpPort: options.httpPort, tcpPort: options.tcpPort, cluster: options.cluster }), { mode: 0o640 });
  fs.writeFileSync(usersFile, clickhouseUsersConfig(options.password), { mode: 0o600 });
  handOver(identity, [...folders, configFile, usersFile]);

  const url = `http://${CLICKHOUSE_USER}:${encodeURIComponent(options.password)}@127.0.0.1:${options.httpPort}/`;
  const target = clickhouseTarget(url, options.database);
  const service = await runLocalService(ctx, {
    spec: {
      name,
      argv: [...clickhouseServerCommand(), `--config-file=${configFile}`],
      runAs: identityPrefix(identity),
      logFile: path.join(clickhouseFolders(dir).log, 'stdout.log'),
      pidFile: path.join(dir, 'service.pid'),
      marker: configFile,
      stopSignal: 'SIGTERM',
      cwd: dir,
    },
    ports: [
      { port: options.httpPort, purpose: 'ClickHouse HTTP (HANGAR_CLICKHOUSE_HTTP_PORT)' },
      { port: options.tcpPort, purpose: 'ClickHouse native (HANGAR_CLICKHOUSE_TCP_PORT)' },
      ...(options.cluster ? [{ port: options.cluster.interserverHttpPort, purpose: `ClickHouse interserver HTTP of ${name}` }] : []),
    ],
    probe: () => answers(target),
  });
  try {
    await ensureDatabase(target);
  } catch (err) {
    await service.stop();
    throw err;
  }
  return { url, database: target.database, service };
}

/**
 * An external ClickHouse (CLICKHOUSE_URL): nothing is started; once it answers, the database the
 * URL names (path or `database` parameter, else `defaultDatabase`) is created if missing.
 */
export async function prepareExternalClickHouse(url: string, defaultDatabase: string, ctx: LaunchContext): Promise<string> {
  const target = clickhouseTarget(url, defaultDatabase);
  await waitUntilReady(`ClickHouse at ${maskPassword(url)}`, () => answers(target), { timeoutMs: ctx.readyTimeoutMs, intervalMs: 500 });
  await ensureDatabase(target);
  return target.database;
}
