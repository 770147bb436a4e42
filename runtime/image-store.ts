import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { manifestOfIndex, ociPlatform, OciDocumentError, parseImageConfig, parseManifest, pullTotalsOf, type ImageRunConfig, type OciManifest, type PullTotals } from '../domain/images/oci-image';
import type { PullProgress } from '../domain/images/pull-progress';
import { canonicalImageReference, parseImageReference, DEFAULT_REGISTRY } from '../domain/images/reference';
import { ImagePullError } from '../domain/images/pull-failure';
import { writeFileAtomically } from './atomic-file';
import { diskUsageBytes } from './disk-usage';
import { BlobFollower, type FollowedBlob } from './blob-follower';
import { unpackLayers } from './layer-unpack';
import { copyFromRegistry, registryManifest, type RegistryCredentials, type SkopeoCopy } from './skopeo';
import { unpackImage } from './umoci';

/** An image pulled to this node and unpacked, ready for sandboxes to run from. */
export interface StoredImage {
  /** The reference it was last pulled by, every part spelt out (`127.0.0.1:5000/team/box:1`). */
  reference: string;
  /** Digest of its manifest: the image's identity on this node. */
  digest: string;
  /** Digest of its config: what buildah calls the image's id. */
  configDigest: string;
  /** Its run settings (Env, WorkingDir, User, Entrypoint, Cmd), from its config. */
  config: ImageRunConfig;
  /** Host folder of its unpacked files, shown read-only to its sandboxes. */
  rootfs: string;
  /** Host folder kept for the image: the rootfs, its record, what the runtime derives from it. */
  dir: string;
  /** Bytes the node stores for it: its blobs (compressed layers, config, manifest) plus the unpacked rootfs. */
  storedBytes: number;
  /**
   * Whether its last pull gave credentials: its registry may want them, so whoever runs it without
   * credentials of their own asks the registry first (a private image is not handed on by the node).
   */
  authenticated: boolean;
}

export type { PullProgress } from '../domain/images/pull-progress';

export interface PullOptions {
  credentials?: RegistryCredentials;
  /** Told as the pull goes (often: every MiB); a pull joining one under way is not told. */
  onProgress?: (progress: PullProgress) => void;
}

/** The record of an unpacked image, `image.json` beside its rootfs. */
interface ImageRecord {
  digest: string;
  configDigest: string;
  config: ImageRunConfig;
  blobBytes: number;
  unpackedBytes: number;
  /** How its rootfs was made: its layers extracted and merged here, or umoci's unpack for what that cannot take. */
  unpackedWith?: 'layers' | 'umoci';
}

export interface ImageStoreOptions {
  /** The store's folder, `<dataDir>/images/oci`. */
  root: string;
  skopeoPath?: string;
  umociPath?: string;
  /** Registries (host[:port] as written in references) reached without TLS checks; loopback ones always are. */
  insecureRegistries?: string[];
}

const TAG = 'image';
/**
 * No signature checks yet: the store takes what the registry serves for a reference (skopeo still
 * checks every blob against its digest). A policy of our own, so the host's does not decide.
 */
const POLICY = { default: [{ type: 'insecureAcceptAnything' }] };

/**
 * The node's OCI images, stored once however many sandboxes use them:
 *
 *   blobs/sha256/<hex>     every blob of every image, content-addressed: a layer two images share is one file
 *   refs/<key>.json        a reference (by the hash of its canonical form) -> the manifest digest it was pulled as
 *   unpacked/<hex>/        one image by manifest digest: rootfs/ (umoci's unpack), image.json, derived folders
 *   pulls/<random>/        one pull in progress: a layout whose blobs/ is a link to the shared one, credentials
 *
 * A pull copies the image with skopeo into a layout of its own whose blobs are the shared ones (a
 * blob already present is not fetched again), unpacks it unless its digest is already unpacked,
 * and only then records the reference, so a failed pull leaves no reference and no half-unpacked
 * image (a blob it fetched stays, content-addressed, for the next try).
 */
export class OciImageStore {
  private readonly pulls = new Map<string, Promise<StoredImage>>();
  private readonly unpacks = new Map<string, Promise<ImageRecord>>();
  private swept?: Promise<void>;

  constructor(private readonly options: ImageStoreOptions) {}

  /** Pulls the image a reference names from its registry (again: a tag may have moved) and unpacks it once. */
  async pull(reference: string, options: PullOptions = {}): Promise<StoredImage> {
    const canonical = canonicalImageReference(parseImageReference(reference));
    // Pulls of one reference at once share one copy, unless they bring different credentials.
    const key = `${canonical}\0${options.credentials ? createHash('sha256').update(JSON.stringify(options.credentials)).digest('hex') : ''}`;
    let pull = this.pulls.get(key);
    if (!pull) {
      pull = this.pullOnce(reference, canonical, options).finally(() => this.pulls.delete(key));
      this.pulls.set(key, pull);
    }
    return pull;
  }

  /** The image a reference was last pulled as on this node, without asking its registry; undefined when never pulled. */
  find(reference: string): Promise<StoredImage | undefined> {
    return this.findKey(canonicalImageReference(parseImageReference(reference)));
  }

  /** The image recorded under a key: a canonical reference, or a workspace's image (workspaceImageKey). */
  async findKey(key: string, owner?: string): Promise<StoredImage | undefined> {
    const text = await fsp.readFile(this.refFile(key), 'utf8').catch(() => undefined);
    if (!text) return undefined;
    const ref = JSON.parse(text) as { digest: string; owner?: string; authenticated?: boolean };
    if (owner !== undefined && ref.owner !== owner) return undefined;
    const record = await this.readRecord(ref.digest);
    return record && this.stored(key, record, ref.authenticated === true);
  }

  /**
   * Files the image tagged `tag` of an OCI layout under `key`: unpacked once per manifest digest,
   * then recorded, so a key names a whole image or nothing. The layout's blobs should be a link
   * to the store's (blobsDir), as a build's push writes them.
   */
  async importLayout(key: string, layoutDir: string, tag: string, owner: string): Promise<StoredImage> {
    await this.prepare();
    const manifest = manifestOfIndex(await fsp.readFile(path.join(layoutDir, 'index.json'), 'utf8'), tag);
    const record = await this.unpackOnce(manifest.digest, layoutDir, tag);
    await writeFileAtomically(this.refFile(key), JSON.stringify({ reference: key, digest: record.digest, owner }));
    // Built on this node from what its workspace sent: no registry's credentials were needed for it.
    return this.stored(key, record, false);
  }

  /**
   * Forgets a key filed by `owner` (a record of the control plane): a late removal for a deleted
   * record never takes the key from a newer record of the same name. The image's files stay:
   * another key may name the same digest, and nothing is collected yet.
   */
  async removeKey(key: string, owner: string): Promise<void> {
    const text = await fsp.readFile(this.refFile(key), 'utf8').catch(() => undefined);
    if (text && (JSON.parse(text) as { owner?: string }).owner === owner) await fsp.rm(this.refFile(key), { force: true });
  }

  /**
   * An OCI layout holding only the stored image `digest`, tagged `image`, for a builder to start
   * from: one per digest under layouts/, its blobs a link to the store's, so nothing is copied and
   * the path a build reads its base from stays the same from one build to the next.
   */
  async layoutOf(image: StoredImage): Promise<{ dir: string; tag: string }> {
    await this.prepare();
    const dir = path.join(this.options.root, 'layouts', image.digest.slice('sha256:'.length));
    if (!fs.existsSync(path.join(dir, 'index.json'))) {
      const staging = `${dir}.${randomBytes(4).toString('hex')}`;
      await fsp.mkdir(staging, { recursive: true, mode: 0o700 });
      await fsp.symlink(path.relative(staging, this.dir('blobs')), path.join(staging, 'blobs'));
      const size = (await fsp.stat(this.blobFile(image.digest))).size;
      const entry = { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: image.digest, size, annotations: { 'org.opencontainers.image.ref.name': TAG } };
      await fsp.writeFile(path.join(staging, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
      await fsp.writeFile(path.join(staging, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: [entry] }));
      await fsp.rename(staging, dir).catch(async () => fsp.rm(staging, { recursive: true, force: true }));
    }
    return { dir, tag: TAG };
  }

  /** The folder of every blob (`<root>/blobs`): a layout whose `blobs` links here writes into the store. */
  async blobsDir(): Promise<string> {
    await this.prepare();
    return this.dir('blobs');
  }

  /** Manifest digests of the images unpacked on this node. */
  async digests(): Promise<string[]> {
    const names = await fsp.readdir(this.dir('unpacked')).catch(() => [] as string[]);
    return names.filter((name) => /^[0-9a-f]{64}$/.test(name)).map((hex) => `sha256:${hex}`);
  }

  private async pullOnce(reference: string, canonical: string, { credentials, onProgress }: PullOptions): Promise<StoredImage> {
    const parsed = parseImageReference(reference);
    // Named by this process, so the next one can tell a pull its dead predecessor left (sweepDeadPulls).
    const workDir = path.join(this.dir('pulls'), `${process.pid}-${randomBytes(8).toString('hex')}`);
    const layoutDir = path.join(workDir, 'layout');
    const copy: SkopeoCopy = {
      reference,
      canonical,
      parsed: { ...parsed, registry: parsed.registry ?? DEFAULT_REGISTRY },
      layoutDir,
      tag: TAG,
      workDir,
      policyFile: this.policyFile(),
      ...(credentials ? { credentials } : {}),
      insecureRegistries: this.options.insecureRegistries ?? [],
      skopeoPath: this.options.skopeoPath ?? 'skopeo',
    };
    try {
      await this.prepare();
      await fsp.mkdir(layoutDir, { recursive: true, mode: 0o700 });
      await fsp.symlink(path.relative(layoutDir, this.dir('blobs')), path.join(layoutDir, 'blobs'));
      // The manifest first, so progress has its totals; layers already stored count as received (they are not fetched).
      const totals = await this.pullTotals(copy);
      const progress: PullProgress = totals ? { bytesDone: await this.storedBytes(totals), layersDone: 0, bytesTotal: totals.bytesTotal, layersTotal: totals.layersTotal } : { bytesDone: 0, layersDone: 0 };
      const tell = () => onProgress?.({ ...progress });
      tell();
      // Layers are extracted while they download; the unpack takes those it can match to the manifest.
      const follower = new BlobFollower(layoutDir, path.join(workDir, 'layers'), {
        bytes: (count) => {
          progress.bytesDone += count;
          tell();
        },
        layer: () => {
          progress.layersDone += 1;
          tell();
        },
      });
      follower.start();
      let followed: FollowedBlob[] = [];
      try {
        await copyFromRegistry(copy);
      } finally {
        // Every follow ends, the copy failed or not, before the pull's folder is removed.
        followed = await follower.finish();
      }
      const manifest = manifestOfIndex(await fsp.readFile(path.join(layoutDir, 'index.json'), 'utf8'), TAG);
      const record = await this.unpackOnce(manifest.digest, layoutDir, TAG, followed);
      await writeFileAtomically(this.refFile(canonical), JSON.stringify({ reference: canonical, digest: record.digest, authenticated: credentials !== undefined }));
      return this.stored(canonical, record, credentials !== undefined);
    } finally {
      await fsp.rm(workDir, { recursive: true, force: true });
    }
  }

  /**
   * What the pull will fetch, from the registry's manifest (for an index, the manifest of this
   * node's platform, the one skopeo copies): one or two small requests before the copy. A
   * manifest that cannot be read (refused, unreachable, a document this does not know) leaves the
   * pull without totals: the copy then says what is wrong in its own words, as before.
   */
  private async pullTotals(copy: SkopeoCopy): Promise<PullTotals | undefined> {
    const platform = ociPlatform(process.arch);
    try {
      let read = pullTotalsOf(await registryManifest(copy), platform);
      if ('manifest' in read) read = pullTotalsOf(await registryManifest(copy, read.manifest), platform);
      return 'totals' in read ? read.totals : undefined;
    } catch (err) {
      if (err instanceof OciDocumentError || err instanceof ImagePullError) return undefined;
      throw err;
    }
  }

  /** Bytes of the layers this node stores already: skopeo does not fetch them again. */
  private async storedBytes(totals: PullTotals): Promise<number> {
    const present = await Promise.all(totals.layers.map((layer) => fsp.stat(this.blobFile(layer.digest)).then(() => layer.size, () => 0)));
    return present.reduce((sum, size) => sum + size, 0);
  }

  /** Unpacks the manifest `digest` of a layout unless this node has it already: one rootfs per digest. */
  private unpackOnce(digest: string, layoutDir: string, tag = TAG, followed: FollowedBlob[] = []): Promise<ImageRecord> {
    let unpack = this.unpacks.get(digest);
    if (!unpack) {
      unpack = this.unpack(digest, layoutDir, tag, followed).finally(() => this.unpacks.delete(digest));
      this.unpacks.set(digest, unpack);
    }
    return unpack;
  }

  private async unpack(digest: string, layoutDir: string, tag: string, followed: FollowedBlob[]): Promise<ImageRecord> {
    const existing = await this.readRecord(digest);
    if (existing) return existing;
    const target = this.unpackedDir(digest);
    const staging = path.join(this.dir('unpacked'), `.${path.basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}`);
    try {
      const manifestText = await fsp.readFile(this.blobFile(digest), 'utf8');
      const manifest = parseManifest(manifestText);
      const unpackedWith = await this.unpackRootfs(manifest, { layoutDir, tag, followed }, staging);
      const config = parseImageConfig(await fsp.readFile(this.blobFile(manifest.config.digest), 'utf8'));
      const record: ImageRecord = {
        digest,
        configDigest: manifest.config.digest,
        config,
        blobBytes: Buffer.byteLength(manifestText) + manifest.config.size + manifest.layers.reduce((sum, layer) => sum + layer.size, 0),
        unpackedBytes: await diskUsageBytes([path.join(staging, 'rootfs')]),
        unpackedWith,
      };
      await fsp.writeFile(path.join(staging, 'image.json'), JSON.stringify(record), { mode: 0o644 });
      await fsp.rename(staging, target).catch(async (err: NodeJS.ErrnoException) => {
        // Another process unpacked the same digest first: theirs is the same content.
        if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
      });
      return (await this.readRecord(digest)) ?? record;
    } finally {
      await fsp.rm(staging, { recursive: true, force: true });
    }
  }

  /**
   * `<staging>/rootfs` from the image's layers (layer-unpack.ts: extracted during the copy or from
   * the store, merged by renames). umoci's unpack is kept for what that path cannot take (a
   * layer type it does not know, a hard link to a file of a lower layer, which GNU tar cannot make
   * within one layer's folder): same result, slower.
   */
  private async unpackRootfs(manifest: OciManifest, source: { layoutDir: string; tag: string; followed: FollowedBlob[] }, staging: string): Promise<'layers' | 'umoci'> {
    await fsp.mkdir(staging, { mode: 0o755 });
    try {
      const layersDir = path.join(staging, 'layers');
      await unpackLayers({ manifest, blobFile: (digest) => this.blobFile(digest), followed: source.followed, layersDir, rootfs: path.join(staging, 'rootfs') });
      await fsp.rm(layersDir, { recursive: true, force: true });
      return 'layers';
    } catch {
      await fsp.rm(staging, { recursive: true, force: true });
      await unpackImage({ layoutDir: source.layoutDir, tag: source.tag, bundleDir: staging, umociPath: this.options.umociPath ?? 'umoci' });
      return 'umoci';
    }
  }

  private async readRecord(digest: string): Promise<ImageRecord | undefined> {
    const text = await fsp.readFile(path.join(this.unpackedDir(digest), 'image.json'), 'utf8').catch(() => undefined);
    return text ? (JSON.parse(text) as ImageRecord) : undefined;
  }

  private stored(reference: string, record: ImageRecord, authenticated: boolean): StoredImage {
    const dir = this.unpackedDir(record.digest);
    return { reference, digest: record.digest, configDigest: record.configDigest, config: record.config, rootfs: path.join(dir, 'rootfs'), dir, storedBytes: record.blobBytes + record.unpackedBytes, authenticated };
  }

  private async prepare(): Promise<void> {
    for (const name of ['blobs', 'pulls', 'unpacked', 'refs'] as const) await fsp.mkdir(this.dir(name), { recursive: true, mode: 0o700 });
    if (!fs.existsSync(this.policyFile())) await writeFileAtomically(this.policyFile(), JSON.stringify(POLICY), 0o644);
    this.swept ??= sweepDeadPulls(this.dir('pulls'), this.dir('unpacked'));
    await this.swept;
  }

  private dir(name: 'blobs' | 'pulls' | 'unpacked' | 'refs'): string {
    return path.join(this.options.root, name);
  }

  private policyFile(): string {
    return path.join(this.options.root, 'policy.json');
  }

  private refFile(canonical: string): string {
    return path.join(this.dir('refs'), `${createHash('sha256').update(canonical).digest('hex').slice(0, 32)}.json`);
  }

  private blobFile(digest: string): string {
    return path.join(this.dir('blobs'), 'sha256', digest.slice('sha256:'.length));
  }

  private unpackedDir(digest: string): string {
    return path.join(this.dir('unpacked'), digest.slice('sha256:'.length));
  }
}

/**
 * Removes what pulls of processes no longer alive left (a worker killed mid-pull): their folders
 * under pulls/ (a layout, extracted layers, and the credentials file of a private pull) and their
 * half-made rootfs under unpacked/. Each is named with its process's pid; one of a live process,
 * this one included, is left alone.
 */
async function sweepDeadPulls(pulls: string, unpacked: string): Promise<void> {
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
  };
  const sweep = async (dir: string, pidOf: (name: string) => number | undefined) => {
    for (const name of await fsp.readdir(dir).catch(() => [] as string[])) {
      const pid = pidOf(name);
      if (pid !== undefined && !alive(pid)) await fsp.rm(path.join(dir, name), { recursive: true, force: true });
    }
  };
  const number = (match: RegExpExecArray | null) => (match ? Number(match[1]) : undefined);
  await sweep(pulls, (name) => number(/^(\d+)-[0-9a-f]+$/.exec(name)));
  await sweep(unpacked, (name) => number(/^\.[0-9a-f]{64}\.(\d+)\.[0-9a-f]+$/.exec(name)));
}
