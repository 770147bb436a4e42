import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { mergeAccountFile } from '../domain/images/accounts';
import { SANDBOX_ETC_FILE_NAMES, SANDBOX_USER, imageEtcFiles } from './etc-files';
import { SANDBOX_AGENT_CONFIG, SANDBOX_HOME } from './layout';

/**
 * The /etc of sandboxes on an unpacked image: the image's own /etc (its programs' settings,
 * certificates, linker cache, accounts) with the platform's files in place of the image's:
 * `nsswitch.conf` as for every sandbox, the sandbox's user merged into the image's accounts, and
 * mount points for the files each sandbox lays over it (`resolv.conf` among them). Built once per
 * image and identity under the image's folder (`etc-<hash>`), never changed once made.
 */
export function buildImageEtc(imageDir: string, rootfs: string, identity: { uid: number; gid: number }): string {
  const imageEtc = path.join(rootfs, 'etc');
  const hasEtc = fs.lstatSync(imageEtc, { throwIfNoEntry: false })?.isDirectory() === true;
  const shell = ['/bin/bash', '/bin/sh'].find((candidate) => fs.lstatSync(path.join(rootfs, candidate), { throwIfNoEntry: false })) ?? '/bin/sh';
  const synthesized = imageEtcFiles({ ...identity, home: SANDBOX_HOME });
  // Only a regular file of the image is read: a link could name any file of the host.
  const readAccounts = (name: string) => {
    const file = path.join(imageEtc, name);
    return hasEtc && fs.lstatSync(file, { throwIfNoEntry: false })?.isFile() ? fs.readFileSync(file, 'utf8') : undefined;
  };
  const files: Record<string, string> = {
    'nsswitch.conf': synthesized['nsswitch.conf'],
    passwd: mergeAccountFile(readAccounts('passwd'), `${SANDBOX_USER}:x:${identity.uid}:${identity.gid}:sandbox user:${SANDBOX_HOME}:${shell}`),
    group: mergeAccountFile(readAccounts('group'), `${SANDBOX_USER}:x:${identity.gid}:`),
  };
  const etcDir = path.join(imageDir, `etc-${createHash('sha256').update(JSON.stringify(files)).digest('hex').slice(0, 16)}`);
  if (fs.existsSync(etcDir)) return etcDir;

  const staging = `${etcDir}.${process.pid}.${randomBytes(4).toString('hex')}`;
  if (hasEtc) {
    // Links are copied as links; devices, pipes and sockets have no business in /etc and are left out.
    fs.cpSync(imageEtc, staging, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true, filter: (source) => isPlain(source) });
  } else {
    fs.mkdirSync(staging, { mode: 0o755 });
  }
  // Whatever the image has at these names goes first (a link there would lead the writes below out to the host).
  const replaced = [...Object.keys(files), ...SANDBOX_ETC_FILE_NAMES, path.relative('/etc', path.dirname(SANDBOX_AGENT_CONFIG))];
  for (const name of replaced) fs.rmSync(path.join(staging, name), { recursive: true, force: true });
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(staging, name), text, { mode: 0o644 });
  // Mount points for the files each sandbox lays over its image's /etc.
  for (const name of [...SANDBOX_ETC_FILE_NAMES, path.relative('/etc', SANDBOX_AGENT_CONFIG)]) {
    fs.mkdirSync(path.dirname(path.join(staging, name)), { recursive: true, mode: 0o755 });
    fs.writeFileSync(path.join(staging, name), '', { mode: 0o644 });
  }
  fs.chmodSync(staging, 0o755);
  try {
    fs.renameSync(staging, etcDir);
  } catch {
    // Another process built the same content first.
    fs.rmSync(staging, { recursive: true, force: true });
  }
  return etcDir;
}

function isPlain(file: string): boolean {
  const stat = fs.lstatSync(file);
  return stat.isFile() || stat.isDirectory() || stat.isSymbolicLink();
}
