import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import zlib from 'node:zlib';
import { lockFile } from './file-lock';
import type { OciImageStore, StoredImage } from './image-store';

/**
 * Debian's packages of `base-image`: a shell, coreutils, Python 3 (with pip and venv), Node, CA
 * certificates and curl, and what users and the platform run inside a sandbox: git, ripgrep (the
 * sandbox API's content search runs `rg` where the image has it) and procps (ps, top, kill).
 */
export const BASE_IMAGE_PACKAGES = ['bash', 'coreutils', 'python3', 'python3-pip', 'python3-venv', 'nodejs', 'ca-certificates', 'curl', 'git', 'ripgrep', 'procps'];
/** What a process of the image finds on its PATH (the image's config `Env`). */
const IMAGE_ENV = ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'LANG=C.UTF-8'];
const TAG = 'image';
const OWNER = 'builtin';

export interface BaseImageOptions {
  store: OciImageStore;
  /** `<dataDir>/images/base-image`: the lock and the attempts in progress. */
  workDir: string;
  mmdebstrapPath?: string;
  /** Debian suite and mirror; by default the host's codename and whatever apt sources mmdebstrap finds. */
  suite?: string;
  mirror?: string;
}

/** One step of a build, for its waiting sandboxes' status and the activity's heartbeats. */
export type BaseImageProgress = (step: string) => void;

/**
 * The built-in `base-image`: a Debian tree made by mmdebstrap from Debian's packages, once per
 * node, then stored in the node's OCI store like any image (one gzip layer, content-addressed,
 * unpacked once, its size on record) under a key naming its recipe, so a change of the package
 * list builds a new one and the old stays for the sandboxes running on it.
 *
 * Builds of one node happen once: in a process, callers share one promise; across processes (a
 * worker restarted, the test set-up and a worker), a file lock lets one build while the others
 * wait, then find the image stored. An attempt cut short by its process's death leaves a folder
 * the next attempt deletes; mmdebstrap and all it started die with their parent (pdeathsig, a pid
 * namespace) in a mount namespace of their own, so neither they nor their mounts outlive it.
 */
export class DebianBaseImage {
  private building?: Promise<StoredImage>;

  constructor(private readonly options: BaseImageOptions) {}

  /** The stored image's key: its recipe's hash, so another recipe is another image. */
  key(): string {
    const recipe = JSON.stringify({ packages: BASE_IMAGE_PACKAGES, env: IMAGE_ENV, suite: this.suite(), mirror: this.options.mirror ?? null });
    return `builtin/base-image/${createHash('sha256').update(recipe).digest('hex').slice(0, 16)}`;
  }

  /** The image if this node has built it, without building it. */
  find(): Promise<StoredImage | undefined> {
    return this.options.store.findKey(this.key());
  }

  /** The image, built first if this node has not yet (see the class comment). */
  async ensure(progress: BaseImageProgress = () => undefined): Promise<StoredImage> {
    const found = await this.find();
    if (found) return found;
    this.building ??= this.buildUnderLock(progress).finally(() => {
      this.building = undefined;
    });
    return this.building;
  }

  private async buildUnderLock(progress: BaseImageProgress): Promise<StoredImage> {
    progress('waiting for the node to finish any other build of base-image');
    const lock = await lockFile(path.join(this.options.workDir, 'build.lock'));
    try {
      const found = await this.find();
      if (found) return found;
      await this.removeAttempts();
      const attempt = path.join(this.options.workDir, `attempt-${randomBytes(6).toString('hex')}`);
      await fsp.mkdir(attempt, { recursive: true, mode: 0o700 });
      try {
        progress(`installing Debian's packages with mmdebstrap (${BASE_IMAGE_PACKAGES.join(', ')})`);
        const tarFile = path.join(attempt, 'rootfs.tar');
        await this.runMmdebstrap(attempt, tarFile, progress);
        progress('storing the image');
        const layoutDir = await this.writeLayout(attempt, tarFile);
        return await this.options.store.importLayout(this.key(), layoutDir, TAG, OWNER);
      } finally {
        await fsp.rm(attempt, { recursive: true, force: true });
      }
    } finally {
      lock.release();
    }
  }

  /** Folders of attempts whose process died: only the lock's holder may delete them. */
  private async removeAttempts(): Promise<void> {
    const names = await fsp.readdir(this.options.workDir).catch(() => [] as string[]);
    await Promise.all(names.filter((n) => n.startsWith('attempt-')).map((n) => fsp.rm(path.join(this.options.workDir, n), { recursive: true, force: true })));
  }

  private suite(): string {
    return this.options.suite ?? hostDebianSuite();
  }

  private runMmdebstrap(attempt: string, tarFile: string, progress: BaseImageProgress): Promise<void> {
    const args = [
      // Dies with this process (pdeathsig), and so does everything it started: mmdebstrap is the
      // first process of a pid namespace (killed with unshare, --kill-child), whose end ends apt
      // and dpkg; its mounts are in a mount namespace of its own.
      '--pdeathsig', 'KILL', 'unshare', '--mount', '--propagation', 'private', '--pid', '--fork', '--kill-child',
      this.options.mmdebstrapPath ?? 'mmdebstrap',
      '--mode=root', '--variant=minbase', '--format=tar', `--include=${BASE_IMAGE_PACKAGES.join(',')}`,
      // Nothing a sandbox needs: the package lists and downloaded packages.
      '--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*',
      this.suite(), tarFile, ...(this.options.mirror ? [this.options.mirror] : []),
    ];
    return new Promise((resolve, reject) => {
      const child = spawn('setpriv', args, { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', TMPDIR: attempt } });
      let tail = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        tail = (tail + chunk).slice(-8192);
        for (const line of chunk.split('\n')) if (line.startsWith('I: ')) progress(`mmdebstrap: ${line.slice(3).trim()}`);
      });
      child.on('error', (err: NodeJS.ErrnoException) => reject(err.code === 'ENOENT' ? new Error('setpriv is not installed (run scripts/install-deps.sh)') : err));
      child.on('close', (code, signal) => {
        if (code === 0) resolve();
        else reject(new Error(`mmdebstrap could not build base-image (${signal ?? `exit ${code}`}): ${tail.trim().split('\n').slice(-3).join(' / ')}`));
      });
    });
  }

  /** An OCI layout of one gzip layer (the tree), its config and manifest, whose blobs are the store's. */
  private async writeLayout(attempt: string, tarFile: string): Promise<string> {
    const blobs = await this.options.store.blobsDir();
    const layer = await compressInto(tarFile, blobs);
    await fsp.rm(tarFile);
    const config = JSON.stringify({
      architecture: process.arch === 'x64' ? 'amd64' : process.arch,
      os: 'linux',
      config: { Env: IMAGE_ENV, WorkingDir: '/' },
      rootfs: { type: 'layers', diff_ids: [layer.diffId] },
    });
    const configBlob = await writeBlob(blobs, config);
    const manifest = JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...configBlob },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: layer.digest, size: layer.size }],
    });
    const manifestBlob = await writeBlob(blobs, manifest);
    const layoutDir = path.join(attempt, 'layout');
    await fsp.mkdir(layoutDir, { mode: 0o700 });
    await fsp.symlink(path.relative(layoutDir, blobs), path.join(layoutDir, 'blobs'));
    await fsp.writeFile(path.join(layoutDir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    const entry = { mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifestBlob, annotations: { 'org.opencontainers.image.ref.name': TAG } };
    await fsp.writeFile(path.join(layoutDir, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: [entry] }));
    return layoutDir;
  }
}

/** The host's Debian codename (`bookworm`): base-image is built from the suite the node runs. */
export function hostDebianSuite(): string {
  const release = fs.readFileSync('/etc/os-release', 'utf8');
  return /^VERSION_CODENAME=(\w+)$/m.exec(release)?.[1] ?? 'stable';
}

/** Stores a document as a blob named by its digest. */
async function writeBlob(blobs: string, text: string): Promise<{ digest: string; size: number }> {
  const hex = createHash('sha256').update(text).digest('hex');
  const file = path.join(blobs, 'sha256', hex);
  await fsp.mkdir(path.dirname(file), { recursive: true });
  const partial = `${file}.${randomBytes(4).toString('hex')}.partial`;
  await fsp.writeFile(partial, text, { mode: 0o644 });
  await fsp.rename(partial, file);
  return { digest: `sha256:${hex}`, size: Buffer.byteLength(text) };
}

/** Gzips the tar into the store's blobs, hashing it before (the layer's diff id) and after (its digest). */
async function compressInto(tarFile: string, blobs: string): Promise<{ digest: string; size: number; diffId: string }> {
  const plain = createHash('sha256');
  const packed = createHash('sha256');
  let size = 0;
  const tap = (hash: ReturnType<typeof createHash>, count: boolean) =>
    new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        if (count) size += chunk.length;
        done(null, chunk);
      },
    });
  await fsp.mkdir(path.join(blobs, 'sha256'), { recursive: true });
  const partial = path.join(blobs, 'sha256', `layer-${randomBytes(6).toString('hex')}.partial`);
  await pipeline(fs.createReadStream(tarFile), tap(plain, false), zlib.createGzip({ level: 1 }), tap(packed, true), fs.createWriteStream(partial, { mode: 0o644 }));
  const hex = packed.digest('hex');
  await fsp.rename(partial, path.join(blobs, 'sha256', hex));
  return { digest: `sha256:${hex}`, size, diffId: `sha256:${plain.digest('hex')}` };
}
