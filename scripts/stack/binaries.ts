import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const INSTALL_HINT = 'run scripts/install-deps.sh';

/** The repository root: the nearest folder above this file holding package.json (works from dist/ too). */
export function repoRoot(): string {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${__dirname}`);
    dir = parent;
  }
  return dir;
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export function findOnPath(name: string, searchPath = process.env.PATH ?? ''): string | undefined {
  for (const dir of searchPath.split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

function firstLineOf(command: string, args: string[]): string | undefined {
  const result = spawnSync(command, args, { encoding: 'utf8', timeout: 15_000 });
  if (result.status !== 0) return undefined;
  return result.stdout.trim().split('\n')[0] || undefined;
}

/** Folder with initdb and postgres of PostgreSQL 15 (HANGAR_PG_BIN_DIR overrides). */
export function postgresBinDir(env = process.env): string {
  const candidates = [env.HANGAR_PG_BIN_DIR, '/usr/lib/postgresql/15/bin'];
  const pgConfig = findOnPath('pg_config');
  if (pgConfig) candidates.push(firstLineOf(pgConfig, ['--bindir']));
  for (const dir of candidates) {
    if (dir && isExecutable(path.join(dir, 'postgres')) && isExecutable(path.join(dir, 'initdb'))) return dir;
  }
  throw new Error(`PostgreSQL 15 server binaries not found: ${INSTALL_HINT} (or set HANGAR_PG_BIN_DIR)`);
}

/** argv prefix that runs the ClickHouse server: Debian's clickhouse-server, or the single `clickhouse` binary. */
export function clickhouseServerCommand(): string[] {
  const server = findOnPath('clickhouse-server');
  if (server) return [server];
  const single = findOnPath('clickhouse');
  if (single) return [single, 'server'];
  throw new Error(`clickhouse-server not found: ${INSTALL_HINT}`);
}

/**
 * The temporal CLI. pyenv puts a shim script on PATH that re-resolves the version on every call;
 * we run the real binary so that signals and the parent-death setting reach it directly.
 */
export function temporalBinary(env = process.env): string {
  const candidates: (string | undefined)[] = [env.HANGAR_TEMPORAL_BIN, path.join(repoRoot(), '.tools', 'temporal', 'bin', 'temporal')];
  const onPath = findOnPath('temporal', env.PATH);
  if (onPath && onPath.includes(`${path.sep}shims${path.sep}`)) {
    candidates.push(firstLineOf('pyenv', ['which', 'temporal']));
  }
  candidates.push(onPath);
  const python = findOnPath('python3', env.PATH);
  if (python) {
    const scripts = firstLineOf(python, ['-c', 'import sysconfig; print(sysconfig.get_path("scripts"))']);
    if (scripts) candidates.push(path.join(scripts, 'temporal'));
  }
  candidates.push(path.join(os.homedir(), '.local', 'bin', 'temporal'), path.join(env.GOPATH || path.join(os.homedir(), 'go'), 'bin', 'temporal'));
  const found = candidates.find((file) => file && isExecutable(file));
  if (!found) throw new Error(`temporal CLI not found: ${INSTALL_HINT} (or set HANGAR_TEMPORAL_BIN)`);
  return found;
}

/** setpriv (util-linux) sets the parent-death signal and switches users without a shell in between. */
export function setprivBinary(): string {
  const found = findOnPath('setpriv') ?? ['/usr/bin/setpriv', '/bin/setpriv'].find(isExecutable);
  if (!found) throw new Error('setpriv (util-linux) not found: install util-linux');
  return found;
}

/**
 * argv prefix that runs a standalone ZooKeeper (Debian's zookeeper package) with a small heap:
 * it only holds a test cluster's DDL queue and replication log, and starts faster so.
 */
export function zooKeeperCommand(env = process.env): string[] {
  const java = findOnPath('java');
  const jar = env.HANGAR_ZOOKEEPER_JAR || '/usr/share/java/zookeeper.jar';
  if (!java || !fs.existsSync(jar)) throw new Error(`ZooKeeper not found (java and ${jar}): ${INSTALL_HINT} (or set HANGAR_ZOOKEEPER_JAR)`);
  return [java, '-Xms16m', '-Xmx128m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-cp', jar, 'org.apache.zookeeper.server.ZooKeeperServerMain'];
}
