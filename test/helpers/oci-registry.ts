import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * A registry of the test's own: Debian's docker-registry (the distribution registry) on a port
 * of loopback the kernel picks (`127.0.0.1:0`, read back from its log), storing under `dir`,
 * optionally asking for an account (htpasswd, bcrypt as the registry requires).
 */
export interface TestRegistry {
  /** host:port, as written in image references. */
  address: string;
  close(): Promise<void>;
}

export async function startRegistry(dir: string, account?: { username: string; password: string }): Promise<TestRegistry> {
  fs.mkdirSync(path.join(dir, 'storage'), { recursive: true });
  const config = ['version: 0.1', 'log:', '  level: info', 'storage:', '  filesystem:', `    rootdirectory: ${path.join(dir, 'storage')}`, 'http:', '  addr: 127.0.0.1:0'];
  if (account) {
    const htpasswd = path.join(dir, 'htpasswd');
    const hash = execFileSync('python3', ['-W', 'ignore', '-c', 'import crypt, sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH)))', account.password], { encoding: 'utf8' }).trim();
    fs.writeFileSync(htpasswd, `${account.username}:${hash}\n`);
    config.push('auth:', '  htpasswd:', '    realm: hangar-test', `    path: ${htpasswd}`);
  }
  fs.writeFileSync(path.join(dir, 'config.yml'), `${config.join('\n')}\n`);
  const child = spawn('docker-registry', ['serve', path.join(dir, 'config.yml')], { stdio: ['ignore', 'ignore', 'pipe'] });
  const address = await new Promise<string>((resolve, reject) => {
    let log = '';
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      log += chunk;
      const listening = /listening on (127\.0\.0\.1:\d+)/.exec(log);
      if (listening) resolve(listening[1]);
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`docker-registry exited (${code}) before listening: ${log.slice(-500)}`)));
  });
  // Keep reading its log so the registry never blocks on a full pipe.
  child.stderr!.resume();
  return { address, close: () => stop(child) };
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

export interface TestImage {
  /** Files of the image besides busybox: path -> content. */
  files: Record<string, string>;
  /** Files of random bytes (nothing compresses them): path -> size in bytes. */
  randomFiles?: Record<string, number>;
  /** Symbolic links: path -> target. */
  links?: Record<string, string>;
  /** Hard links: path -> the path (of this layer) it is another name of. */
  hardLinks?: Record<string, string>;
  /** Character device nodes, mode 0666: path -> [major, minor]. */
  devices?: Record<string, [number, number]>;
  /** Modes to set, after the files are written: path -> mode (setuid and sticky bits too). */
  modes?: Record<string, number>;
  /** Paths of the layers below that this layer deletes (umoci writes whiteouts for them). */
  remove?: string[];
  /** busybox in /usr/bin with /bin a link to it, as Debian's merged /usr has it (else in /bin). */
  mergedUsr?: boolean;
  user?: string;
  env: string[];
  workingDir?: string;
}

/**
 * Builds an OCI image with umoci in the layout `layoutDir`, tagged `tag`: one layer with Debian's
 * static busybox at /bin/busybox and its applets as links beside it (no libc at all: the agent
 * must bring its own), plus `files`; then its config. `from` starts from another tag of the same
 * layout instead of nothing, adding one layer, as a Dockerfile's later steps do.
 */
export function buildTestImage(layoutDir: string, tag: string, image: TestImage, from?: string): void {
  const umoci = (...args: string[]) => execFileSync('umoci', args, { stdio: ['ignore', 'ignore', 'inherit'] });
  if (!fs.existsSync(path.join(layoutDir, 'index.json'))) umoci('init', '--layout', layoutDir);
  const bundle = `${layoutDir}-bundle-${tag}`;
  fs.rmSync(bundle, { recursive: true, force: true });
  if (from) {
    umoci('tag', '--image', `${layoutDir}:${from}`, tag);
    umoci('unpack', '--image', `${layoutDir}:${tag}`, bundle);
  } else {
    umoci('new', '--image', `${layoutDir}:${tag}`);
    umoci('unpack', '--image', `${layoutDir}:${tag}`, bundle);
    const bin = path.join(bundle, 'rootfs', image.mergedUsr ? 'usr/bin' : 'bin');
    fs.mkdirSync(bin, { recursive: true, mode: 0o755 });
    if (image.mergedUsr) fs.symlinkSync('usr/bin', path.join(bundle, 'rootfs', 'bin'));
    fs.copyFileSync('/bin/busybox', path.join(bin, 'busybox'));
    fs.chmodSync(path.join(bin, 'busybox'), 0o755);
    for (const applet of execFileSync('/bin/busybox', ['--list'], { encoding: 'utf8' }).split('\n').filter(Boolean)) {
      if (applet !== 'busybox') fs.symlinkSync('busybox', path.join(bin, applet));
    }
  }
  for (const [file, content] of Object.entries(image.files)) {
    const target = path.join(bundle, 'rootfs', file);
    fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o755 });
    fs.writeFileSync(target, content, { mode: 0o644 });
  }
  for (const [file, size] of Object.entries(image.randomFiles ?? {})) {
    const target = path.join(bundle, 'rootfs', file);
    fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o755 });
    const out = fs.openSync(target, 'w', 0o644);
    try {
      execFileSync('head', ['-c', String(size), '/dev/urandom'], { stdio: ['ignore', out, 'inherit'] });
    } finally {
      fs.closeSync(out);
    }
  }
  for (const [link, target] of Object.entries(image.links ?? {})) {
    fs.mkdirSync(path.dirname(path.join(bundle, 'rootfs', link)), { recursive: true, mode: 0o755 });
    fs.symlinkSync(target, path.join(bundle, 'rootfs', link));
  }
  for (const [link, target] of Object.entries(image.hardLinks ?? {})) fs.linkSync(path.join(bundle, 'rootfs', target), path.join(bundle, 'rootfs', link));
  for (const [file, [major, minor]] of Object.entries(image.devices ?? {})) execFileSync('mknod', ['-m', '666', path.join(bundle, 'rootfs', file), 'c', String(major), String(minor)]);
  for (const [file, mode] of Object.entries(image.modes ?? {})) fs.chmodSync(path.join(bundle, 'rootfs', file), mode);
  for (const file of image.remove ?? []) fs.rmSync(path.join(bundle, 'rootfs', file), { recursive: true });
  umoci('repack', '--image', `${layoutDir}:${tag}`, bundle);
  const config = image.env.flatMap((entry) => ['--config.env', entry]);
  if (image.workingDir) config.push('--config.workingdir', image.workingDir);
  if (image.user) config.push('--config.user', image.user);
  umoci('config', '--image', `${layoutDir}:${tag}`, ...config, '--config.cmd', '/bin/sh');
  fs.rmSync(bundle, { recursive: true, force: true });
}

/** Pushes a tag of a layout to a registry of the test's (plain HTTP on loopback). */
export function pushTestImage(layoutDir: string, tag: string, destination: string, account?: { username: string; password: string }): void {
  const credentials = account ? ['--dest-creds', `${account.username}:${account.password}`] : ['--dest-no-creds'];
  execFileSync('skopeo', ['copy', '--quiet', '--dest-tls-verify=false', ...credentials, `oci:${layoutDir}:${tag}`, `docker://${destination}`], { stdio: ['ignore', 'ignore', 'inherit'] });
}
