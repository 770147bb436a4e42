import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { BUILTIN_IMAGE_NAMES, imageName, isBuiltinImage } from '../domain/images/builtin';
import { SANDBOX_ETC_FILE_NAMES, imageEtcFiles } from './etc-files';
import type { HostLoader } from './host-loader';
import { SANDBOX_AGENT_CONFIG, SANDBOX_HOME } from './layout';
import { SandboxSpecError } from './sandbox-runtime';

/**
 * Images of host folders: an image names host folders that a sandbox sees read-only. The only
 * one is `base`, the node's own system folders (a shell, Python 3 and Node with their libraries),
 * which sandboxes made before `base-image` became the default run on, and any naming it. (The
 * other built-in image, `base-image`, the default, is a stored Debian tree: base-image.ts.) Everything writable comes from the sandbox's own layer, so an
 * image is shared by every sandbox and never changes under them.
 */
export interface ImageDefinition {
  name: string;
  /** Host paths shown at the same place: folders bound read-only, symlinks recreated as such. */
  systemPaths: string[];
  /**
   * Host /etc entries that hold no secret and that programs expect (dynamic linker cache,
   * Debian alternatives, CA certificates, time zone), copied into the image's own /etc. Never
   * /etc/shadow, keys or service settings.
   */
  hostEtcEntries: string[];
  /**
   * Bytes the platform stores for the image, billed to every sandbox that uses it as image
   * storage (with the sandbox's own writable layer). `base` stores none: its files are the host's
   * own system folders, which the platform neither made nor keeps, and which grow whenever the
   * operator installs a package; billing them would charge a user for the node's software. The
   * /etc folder built for the image is not counted either: it is derived from the host's /etc
   * (it changes with the host's packages), a few hundred kilobytes shared by every sandbox.
   */
  storedBytes: number;
}

/**
 * One step of the image's read-only tree, as found on this host: a bind of the host's `source`
 * (the same path when absent, as for the built-in image's system folders) or a symbolic link.
 */
export type SystemMount = { kind: 'ro-bind'; path: string; source?: string } | { kind: 'symlink'; path: string; target: string };

export interface ResolvedImage {
  name: string;
  mounts: SystemMount[];
  /** The image's /etc on the host: synthesized files, the allowed host entries, mount points. */
  etcDir: string;
  /**
   * For an image pulled from a registry, whose libc may not be the host's: the folder of the
   * host's loader and libraries the agent is started through (host-loader.ts).
   */
  hostLoader?: HostLoader;
  /** For an image pulled from a registry: what its config asks of its processes. */
  run?: ImageRunSettings;
  /**
   * For a stored image mounted as the sandbox's root overlay (root-overlay.ts): its rootfs, the
   * overlay's read-only lower layer; `mounts` is then empty.
   */
  lowerDir?: string;
  /** For a stored image (pulled, built, base-image): its manifest's digest, which a sandbox's record keeps. */
  digest?: string;
}

/** An image's settings for the processes of its sandboxes. */
export interface ImageRunSettings {
  /** Its `Env`, under the sandbox's own envs. */
  env: [string, string][];
  /** Its `WorkingDir`, when the image has that folder: where processes start unless told otherwise. */
  workingDir?: string;
  /** The sandbox's root is an overlay of the image: the whole tree is writable where its owners and modes allow. */
  rootWritable?: boolean;
}

const BASE: ImageDefinition = {
  name: 'base',
  systemPaths: ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'],
  hostEtcEntries: [
    'alternatives',
    'ld.so.cache',
    'ld.so.conf',
    'ld.so.conf.d',
    'localtime',
    'timezone',
    'services',
    'protocols',
    'mime.types',
    'ssl/certs',
    'ssl/openssl.cnf',
    'ca-certificates.conf',
    'os-release',
    'debian_version',
    'bash.bashrc',
    'profile',
    'inputrc',
    'terminfo',
    'python3',
    'python3.11',
    'gai.conf',
    'host.conf',
  ],
  storedBytes: 0,
};

const IMAGES = new Map<string, ImageDefinition>([[BASE.name, BASE]]);

export { imageName };

/** Whether the reference names a built-in image: `base` (host folders) or `base-image` (built by the node). */
export function imageExists(reference: string): boolean {
  return isBuiltinImage(reference);
}

export function availableImages(): string[] {
  return [...BUILTIN_IMAGE_NAMES];
}

/** Whether the reference names an image of host folders (`base`), as opposed to a stored one. */
export function isHostImage(reference: string): boolean {
  return IMAGES.has(imageName(reference));
}

export function imageDefinition(reference: string): ImageDefinition {
  const image = IMAGES.get(imageName(reference));
  if (!image) throw new SandboxSpecError(`image '${reference}' does not exist; available: ${availableImages().join(', ')}`);
  return image;
}

/**
 * Prepares each image once per process: probes the host's system folders and builds the
 * image's /etc under `<dataDir>/images/<name>/etc-<content hash>`. A folder is never changed
 * or removed once built, because running sandboxes have it mounted; a host change (a package
 * update) gives a new hash and new sandboxes get the new folder.
 */
export class ImageCatalog {
  private readonly resolved = new Map<string, ResolvedImage>();

  constructor(
    private readonly dataDir: string,
    private readonly identity: { uid: number; gid: number },
  ) {}

  resolve(name: string): ResolvedImage {
    const definition = imageDefinition(name);
    let image = this.resolved.get(definition.name);
    if (!image) {
      image = { name: definition.name, mounts: systemMounts(definition), etcDir: this.buildEtc(definition) };
      this.resolved.set(definition.name, image);
    }
    return image;
  }

  /** Bytes the platform stores for the image (see ImageDefinition.storedBytes). */
  storedBytes(name: string): number {
    return imageDefinition(name).storedBytes;
  }

  private buildEtc(definition: ImageDefinition): string {
    const synthesized = imageEtcFiles({ ...this.identity, home: SANDBOX_HOME });
    const entries = definition.hostEtcEntries.filter((entry) => fs.existsSync(`/etc/${entry}`));
    const hash = createHash('sha256').update(JSON.stringify(synthesized));
    for (const entry of entries) fingerprint(hash, `/etc/${entry}`);
    const imageDir = path.join(this.dataDir, 'images', definition.name);
    const etcDir = path.join(imageDir, `etc-${hash.digest('hex').slice(0, 16)}`);
    if (fs.existsSync(etcDir)) return etcDir;

    const staging = `${etcDir}.${process.pid}.${randomBytes(4).toString('hex')}`;
    fs.mkdirSync(staging, { recursive: true, mode: 0o755 });
    for (const [name, text] of Object.entries(synthesized)) fs.writeFileSync(path.join(staging, name), text, { mode: 0o644 });
    for (const entry of entries) {
      fs.mkdirSync(path.dirname(path.join(staging, entry)), { recursive: true, mode: 0o755 });
      fs.cpSync(`/etc/${entry}`, path.join(staging, entry), { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
    }
    // Mount points for the files each sandbox lays over its image's /etc.
    for (const name of [...SANDBOX_ETC_FILE_NAMES, path.relative('/etc', SANDBOX_AGENT_CONFIG)]) {
      fs.mkdirSync(path.dirname(path.join(staging, name)), { recursive: true, mode: 0o755 });
      fs.writeFileSync(path.join(staging, name), '', { mode: 0o644 });
    }
    try {
      fs.renameSync(staging, etcDir);
    } catch {
      // Another process built the same content first.
      fs.rmSync(staging, { recursive: true, force: true });
    }
    return etcDir;
  }
}

const probedMounts = new Map<string, SystemMount[]>();

/** The image's system folders as found on this host, probed once per process. */
function systemMounts(definition: ImageDefinition): SystemMount[] {
  let mounts = probedMounts.get(definition.name);
  if (!mounts) {
    mounts = probeMounts(definition);
    probedMounts.set(definition.name, mounts);
  }
  return mounts;
}

/**
 * The host's own system folders (those of `base`: /usr and its links), for the node's own tools
 * run behind bubblewrap with nothing else of the host (runtime/confined-copy.ts).
 */
export function hostSystemMounts(): SystemMount[] {
  return systemMounts(BASE);
}

function probeMounts(definition: ImageDefinition): SystemMount[] {
  const mounts: SystemMount[] = [];
  for (const path of definition.systemPaths) {
    const stat = fs.lstatSync(path, { throwIfNoEntry: false });
    if (!stat) continue;
    if (stat.isSymbolicLink()) mounts.push({ kind: 'symlink', path, target: fs.readlinkSync(path) });
    else if (stat.isDirectory()) mounts.push({ kind: 'ro-bind', path });
  }
  if (!mounts.some((m) => m.path === '/usr' && m.kind === 'ro-bind')) {
    throw new Error(`image '${definition.name}' needs the host's /usr folder`);
  }
  return mounts;
}

/** Names, sizes, times and link targets of a host tree: changes when the host's files change. */
function fingerprint(hash: ReturnType<typeof createHash>, file: string): void {
  const stat = fs.lstatSync(file);
  hash.update(`${file}\0${stat.mode}\0${stat.size}\0${stat.mtimeMs}\0`);
  if (stat.isSymbolicLink()) hash.update(fs.readlinkSync(file));
  else if (stat.isDirectory()) for (const name of fs.readdirSync(file).sort()) fingerprint(hash, path.join(file, name));
}
