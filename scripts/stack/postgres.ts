import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { postgresBinDir } from './binaries';
import { chooseIdentity, handOver, identityPrefix, type RunIdentity } from './identity';
import { runLocalService, type LaunchContext, type StartedService } from './local-service';
import { waitUntilReady } from './readiness';
import { commandLineOf, isAlive, runOnce } from './service-process';
import { maskPassword } from './urls';

const ROLE = 'hangar';
const DATABASE = 'hangar';
const MAJOR_VERSION = '15';
// sun_path holds 108 bytes including the terminating NUL.
const MAX_SOCKET_PATH = 107;

export interface LocalPostgresOptions {
  dataDir: string;
  port: number;
  password: string;
  /** Skip fsync: much faster, and a crash can corrupt the cluster. For throw-away test data only. */
  fastWrites: boolean;
}

function urlOf(password: string, port: number, database: string): string {
  return `postgres://${ROLE}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}

/** Where the local PostgreSQL of `npm start` answers, for tools that run beside it (billing:check). */
export function localPostgresUrl(password: string, port: number): string {
  return urlOf(password, port, DATABASE);
}

async function query(connectionString: string, sql: string): Promise<number> {
  const client = new Client({ connectionString, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    return (await client.query(sql)).rowCount ?? 0;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * postmaster.pid (and the socket's lock file) outlive a hard kill. PostgreSQL refuses to start
 * while the pid written there belongs to any live process, which after a reboot or in a
 * container can be an unrelated one; only a live postmaster of this very cluster counts.
 */
function removeStaleLockFiles(pgdata: string, lockFiles: string[]): void {
  for (const file of lockFiles) {
    let pid: number;
    try {
      pid = Number(fs.readFileSync(file, 'utf8').split('\n')[0]);
    } catch {
      continue;
    }
    if (isAlive(pid) && commandLineOf(pid)?.includes(pgdata)) {
      throw new Error(`a PostgreSQL server (pid ${pid}) that hangar did not start is running on ${pgdata}; stop it first`);
    }
    fs.rmSync(file, { force: true });
  }
}

/** An eighth of the machine's memory, between PostgreSQL's default 128 MB and 1 GB. */
function sharedBuffersMb(): number {
  return Math.max(128, Math.min(1024, Math.floor(os.totalmem() / 8 / 2 ** 20)));
}

/**
 * glibc's allocator settings for our PostgreSQL, after any the environment already sets. Each
 * ingestion request hands a backend megabytes of outbox text, which by default glibc gives back
 * to the kernel when the statement ends, to fault in page by page at the next one (about a tenth
 * of PostgreSQL's CPU during ingestion). A backend keeps its peak instead: a few megabytes each.
 */
export function backendMallocTunables(existing: string | undefined): string {
  const ours = 'glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824';
  return existing ? `${existing}:${ours}` : ours;
}

/** The server's settings (`-c key=value`) for our own cluster. */
function serverSettings(options: LocalPostgresOptions, socketDir: string): Record<string, string> {
  const socketFits = path.join(socketDir, `.s.PGSQL.${options.port}`).length <= MAX_SOCKET_PATH;
  return {
    listen_addresses: '127.0.0.1',
    // A data folder deep enough to overflow a socket path simply gets no socket; we use TCP.
    unix_socket_directories: socketFits ? socketDir : '',
    // The usage ledger's index grows with every event and is written at random places: it
    // should stay in memory, and checkpoints (each followed by full-page images of every page
    // touched again) should come by time, not by WAL volume, during an ingestion burst. At about
    // 110 bytes of WAL per event, 8GB lets some 35 million events in before one (2GB: 9 million).
    shared_buffers: `${sharedBuffersMb()}MB`,
    max_wal_size: '8GB',
    checkpoint_timeout: '15min',
    ...(options.fastWrites ? { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' } : {}),
  };
}

/** Where our own cluster keeps what, under `<dataDir>/postgres`. */
interface ClusterFolders {
  dir: string;
  pgdata: string;
  socketDir: string;
  logFile: string;
}

/** initdb on the first start; refuses a cluster of another major version. */
async function initCluster(folders: ClusterFolders, identity: RunIdentity, password: string, log: LaunchContext['log']): Promise<void> {
  const { dir, pgdata, logFile } = folders;
  const versionFile = path.join(pgdata, 'PG_VERSION');
  if (fs.existsSync(versionFile)) {
    const version = fs.readFileSync(versionFile, 'utf8').trim();
    if (version !== MAJOR_VERSION) {
      throw new Error(`${pgdata} holds a PostgreSQL ${version} cluster; this stack runs ${MAJOR_VERSION}. Move it away or use another HANGAR_DATA_DIR`);
    }
    return;
  }
  // Without PG_VERSION the folder is what an interrupted initdb left: nothing worth keeping.
  if (fs.existsSync(pgdata)) fs.rmSync(pgdata, { recursive: true, force: true });
  log(`postgres: creating a new cluster in ${pgdata}`);
  const passwordFile = path.join(dir, '.initdb-password');
  fs.writeFileSync(passwordFile, password, { mode: 0o600 });
  handOver(identity, [passwordFile]);
  try {
    const initdb = [path.join(postgresBinDir(), 'initdb'), '-D', pgdata, '-U', ROLE, `--pwfile=${passwordFile}`, '--auth=scram-sha-256', '-E', 'UTF8', '--no-locale'];
    await runOnce('initdb', [...identityPrefix(identity), ...initdb], logFile);
  } finally {
    fs.rmSync(passwordFile, { force: true });
  }
}

/** Creates database `hangar` unless it exists; stops the service when that fails. */
async function ensureDatabase(adminUrl: string, service: StartedService): Promise<void> {
  try {
    if ((await query(adminUrl, `SELECT 1 FROM pg_database WHERE datname = '${DATABASE}'`)) === 0) {
      await query(adminUrl, `CREATE DATABASE ${DATABASE}`).catch((err: { code?: string }) => {
        // 42P04 duplicate_database: created meanwhile, which is what we wanted.
        if (err.code !== '42P04') throw err;
      });
    }
  } catch (err) {
    await service.stop();
    throw err;
  }
}

/**
 * Our own cluster under `<dataDir>/postgres`: initdb on the first start (role `hangar`, password
 * auth on TCP and socket alike), then PostgreSQL 15 on 127.0.0.1 with its socket inside the
 * folder, and database `hangar`. Returns the URL of that database.
 */
export async function startLocalPostgres(
  options: LocalPostgresOptions,
  ctx: LaunchContext,
): Promise<{ url: string; service: StartedService }> {
  const dir = path.join(options.dataDir, 'postgres');
  const folders: ClusterFolders = { dir, pgdata: path.join(dir, 'data'), socketDir: path.join(dir, 'run'), logFile: path.join(dir, 'postgres.log') };
  const { pgdata, socketDir, logFile } = folders;
  fs.mkdirSync(socketDir, { recursive: true, mode: 0o700 });
  const identity = chooseIdentity('postgres', dir, ctx.log);
  handOver(identity, [socketDir]);
  const { port, password } = options;
  const settings = serverSettings(options, socketDir);
  const adminUrl = urlOf(password, port, 'postgres');

  const service = await runLocalService(ctx, {
    spec: {
      name: 'postgres',
      argv: [path.join(postgresBinDir(), 'postgres'), '-D', pgdata, '-p', String(port), ...Object.entries(settings).flatMap(([key, value]) => ['-c', `${key}=${value}`])],
      runAs: identityPrefix(identity),
      logFile,
      pidFile: path.join(dir, 'service.pid'),
      marker: pgdata,
      stopSignal: 'SIGINT',
      stopTimeoutMs: 30_000,
      env: { ...process.env, GLIBC_TUNABLES: backendMallocTunables(process.env.GLIBC_TUNABLES) },
    },
    ports: [{ port, purpose: 'PostgreSQL (HANGAR_POSTGRES_PORT)' }],
    probe: async () => {
      await query(adminUrl, 'SELECT 1');
    },
    prepare: async () => {
      removeStaleLockFiles(pgdata, [path.join(pgdata, 'postmaster.pid'), path.join(socketDir, `.s.PGSQL.${port}.lock`)]);
      await initCluster(folders, identity, password, ctx.log);
    },
  });
  await ensureDatabase(adminUrl, service);
  return { url: urlOf(password, port, DATABASE), service };
}

/** An external PostgreSQL (DATABASE_URL): used as is, once it answers. */
export async function waitForExternalPostgres(url: string, ctx: LaunchContext): Promise<void> {
  await waitUntilReady(`PostgreSQL at ${maskPassword(url)}`, () => query(url, 'SELECT 1'), { timeoutMs: ctx.readyTimeoutMs, intervalMs: 500 });
}
