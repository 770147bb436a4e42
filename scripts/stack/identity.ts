import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { findOnPath, setprivBinary } from './binaries';

/**
 * Who a local service runs as. PostgreSQL refuses to run as root, and a database server has no
 * business holding root's rights anyway, so as root we run each service as its package's system
 * user. When that user cannot reach the data folder (a checkout under a private home, say), the
 * fallback is a fresh user namespace in which the service is an ordinary user and the root-owned
 * files appear as its own.
 */
export type RunIdentity =
  | { kind: 'current' }
  | { kind: 'user'; user: string; uid: number; gid: number }
  | { kind: 'user-namespace' };

function idOf(user: string, flag: '-u' | '-g'): number | undefined {
  const result = spawnSync('id', [flag, user], { encoding: 'utf8' });
  return result.status === 0 ? Number(result.stdout.trim()) : undefined;
}

/** argv prefix that runs a command as `identity`. */
export function identityPrefix(identity: RunIdentity): string[] {
  switch (identity.kind) {
    case 'current':
      return [];
    case 'user':
      return [setprivBinary(), `--reuid=${identity.uid}`, `--regid=${identity.gid}`, '--init-groups', '--'];
    case 'user-namespace': {
      const unshare = findOnPath('unshare') ?? '/usr/bin/unshare';
      return [unshare, '--map-user=1', '--map-group=1', '--'];
    }
  }
}

/** Makes `paths` belong to the identity, so that the service can write them. */
export function handOver(identity: RunIdentity, paths: string[]): void {
  if (identity.kind !== 'user') return;
  for (const file of paths) fs.chownSync(file, identity.uid, identity.gid);
}

/**
 * Chooses how to run a service that owns `dir` (created beforehand). As root: `user` if it exists
 * and can write `dir` once handed over; otherwise a user namespace.
 */
export function chooseIdentity(user: string, dir: string, log: (line: string) => void): RunIdentity {
  if (process.getuid?.() !== 0) return { kind: 'current' };
  const uid = idOf(user, '-u');
  const gid = idOf(user, '-g');
  if (uid !== undefined && gid !== undefined) {
    const identity: RunIdentity = { kind: 'user', user, uid, gid };
    handOver(identity, [dir]);
    const probe = spawnSync(identityPrefix(identity)[0], [...identityPrefix(identity).slice(1), 'test', '-w', dir]);
    if (probe.status === 0) return identity;
    fs.chownSync(dir, 0, 0);
    log(`user ${user} cannot reach ${dir} (a parent folder is closed to it); running in a user namespace instead`);
  } else {
    log(`system user ${user} does not exist; running in a user namespace instead`);
  }
  return { kind: 'user-namespace' };
}
