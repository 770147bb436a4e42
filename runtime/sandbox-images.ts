import fs from 'node:fs';
import path from 'node:path';
import type { BaseImage } from '../domain/images/dockerfile';
import { ImageReferenceError, parseImageReference } from '../domain/images/reference';
import { parseWorkspaceImage, workspaceImageKey } from '../domain/images/workspace-image';
import { isBuiltBaseImage } from '../domain/images/builtin';
import { DebianBaseImage, type BaseImageProgress } from './base-image';
import { prepareHostLoader, type HostLoader } from './host-loader';
import { ImageCatalog, availableImages, imageExists, isHostImage, type ImageRunSettings, type ResolvedImage } from './image';
import { buildImageEtc } from './image-etc';
import { ImageBuilder, type ImageBuild } from './image-builder';
import { OciImageStore, type PullOptions, type StoredImage } from './image-store';
import { rootfsMounts } from './image-tree';
import { SandboxSpecError } from './sandbox-runtime';

export interface SandboxImagesOptions {
  dataDir: string;
  identity: { uid: number; gid: number };
  /** Host programs the agent runs inside a sandbox on a pulled image (through the host's loader). */
  nodeBinary: string;
  setprivBinary: string;
  skopeoPath?: string;
  umociPath?: string;
  insecureRegistries?: string[];
  buildahPath?: string;
  /** buildah's storage driver (overlay unless the data folder's file system cannot hold it). */
  buildStorageDriver?: string;
  /** How base-image is built (base-image.ts): mmdebstrap, and the Debian suite and mirror. */
  mmdebstrapPath?: string;
  baseImageSuite?: string;
  baseImageMirror?: string;
  /**
   * Sandboxes on stored images run on an overlay of the image with a writable layer of their own
   * (root-overlay.ts; the default); false shows the image as read-only binds of its entries instead.
   */
  rootOverlay?: boolean;
}

/** A build of a workspace's image: its key's parts, the context, progress; see ImageBuilder. */
export type WorkspaceImageBuild = Omit<ImageBuild, 'key' | 'resolveBase'> & { workspaceId: string; name: string; tag: string };

/**
 * The images a node runs sandboxes from: the built-in ones, `base` (the host's own folders,
 * image.ts) and `base-image` (a Debian tree the node builds once into its store, base-image.ts),
 * and any other reference, an OCI image pulled from its registry into the node's store
 * (image-store.ts). A reference is built-in when its name is one (`base`, `base-image`, whatever
 * registry, namespace or tag it is written with), so those names cannot be pulled.
 */
export class SandboxImages {
  readonly store: OciImageStore;
  readonly baseImage: DebianBaseImage;
  private readonly builder: ImageBuilder;
  private readonly builtins: ImageCatalog;
  private hostLoader?: HostLoader;

  constructor(private readonly options: SandboxImagesOptions) {
    this.builtins = new ImageCatalog(options.dataDir, options.identity);
    this.store = new OciImageStore({
      root: path.join(options.dataDir, 'images', 'oci'),
      ...(options.skopeoPath ? { skopeoPath: options.skopeoPath } : {}),
      ...(options.umociPath ? { umociPath: options.umociPath } : {}),
      insecureRegistries: options.insecureRegistries ?? [],
    });
    this.baseImage = new DebianBaseImage({
      store: this.store,
      workDir: path.join(options.dataDir, 'images', 'base-image'),
      ...(options.mmdebstrapPath ? { mmdebstrapPath: options.mmdebstrapPath } : {}),
      ...(options.baseImageSuite ? { suite: options.baseImageSuite } : {}),
      ...(options.baseImageMirror ? { mirror: options.baseImageMirror } : {}),
    });
    this.builder = new ImageBuilder({
      imagesDir: path.join(options.dataDir, 'images'),
      store: this.store,
      ...(options.buildahPath ? { buildahPath: options.buildahPath } : {}),
      ...(options.buildStorageDriver ? { storageDriver: options.buildStorageDriver } : {}),
    });
  }

  /**
   * Builds an image of a workspace from a Dockerfile into the node's store, filed under the
   * workspace's `name:tag`. A FROM of the workspace builds on its image on this node; one of a
   * registry is pulled first (a fixed tag already here is not asked for again).
   */
  build(build: WorkspaceImageBuild): Promise<StoredImage> {
    const { workspaceId, name, tag, ...rest } = build;
    const resolveBase = async (base: BaseImage): Promise<StoredImage> => {
      if (base.kind === 'workspace') return this.stored(base.reference, workspaceId);
      return (await this.store.find(base.reference)) ?? (await this.pull(base.reference));
    };
    return this.builder.build({ ...rest, key: workspaceImageKey(workspaceId, { name, tag }), resolveBase });
  }

  /** The workspace's image tag as this node stores it, if it does. */
  findWorkspaceImage(workspaceId: string, name: string, tag: string): Promise<StoredImage | undefined> {
    return this.store.findKey(workspaceImageKey(workspaceId, { name, tag }));
  }

  /** Forgets a workspace's image tag on this node (its files stay for other tags of the same digest). */
  removeWorkspaceImage(workspaceId: string, name: string, tag: string, owner: string): Promise<void> {
    return this.store.removeKey(workspaceImageKey(workspaceId, { name, tag }), owner);
  }

  isBuiltin(reference: string): boolean {
    return imageExists(reference);
  }

  /** Pulls an image from its registry into the node's store (see OciImageStore.pull). */
  pull(reference: string, options: PullOptions = {}): Promise<StoredImage> {
    if (this.isBuiltin(reference)) return Promise.reject(new SandboxSpecError(`image '${reference}' is built in: there is nothing to pull`));
    return this.store.pull(reference, options).catch((err: unknown) => {
      throw err instanceof ImageReferenceError ? new SandboxSpecError(err.message) : err;
    });
  }

  /**
   * Throws a SandboxSpecError naming the problem when the reference cannot run here now:
   * malformed, or not pulled. base-image is built first when the node has not yet.
   */
  async check(reference: string, workspaceId: string): Promise<void> {
    if (isHostImage(reference)) this.builtins.resolve(reference);
    else await this.stored(reference, workspaceId);
  }

  /** base-image, built first when this node has not yet (BaseImage.ensure). */
  ensureBaseImage(progress?: BaseImageProgress): Promise<StoredImage> {
    return this.baseImage.ensure(progress);
  }

  /**
   * The image's tree for one sandbox: a stored image's rootfs as the lower layer of the sandbox's
   * root overlay; or, without overlays (and for the host's folders), read-only binds, which for a
   * stored image depend on the sandbox, whose own folders and volumes (`owned`) take their places
   * in the image's tree.
   */
  async resolve(reference: string, workspaceId: string, owned: string[]): Promise<ResolvedImage> {
    if (isHostImage(reference)) return this.builtins.resolve(reference);
    const image = await this.stored(reference, workspaceId);
    const overlay = this.rootOverlay();
    return {
      name: isBuiltBaseImage(reference) ? 'base-image' : image.reference,
      mounts: overlay ? [] : rootfsMounts(image.rootfs, owned),
      ...(overlay ? { lowerDir: image.rootfs } : {}),
      etcDir: buildImageEtc(image.dir, image.rootfs, this.options.identity),
      hostLoader: this.loader(),
      run: runSettings(image, overlay),
      digest: image.digest,
    };
  }

  /** What the image asks of its processes; undefined for the host's folders. */
  async runSettings(reference: string, workspaceId: string): Promise<ImageRunSettings | undefined> {
    return isHostImage(reference) ? undefined : runSettings(await this.stored(reference, workspaceId), this.rootOverlay());
  }

  private rootOverlay(): boolean {
    return this.options.rootOverlay !== false;
  }

  /** Bytes the platform stores for the image (nothing for the host's folders; see ImageDefinition.storedBytes). */
  async storedBytes(reference: string, workspaceId: string | undefined): Promise<number> {
    if (isHostImage(reference)) return this.builtins.storedBytes(reference);
    return (await this.find(reference, workspaceId).catch(() => undefined))?.storedBytes ?? 0;
  }

  /**
   * The stored image a reference names: base-image as this node built it, a workspace's own
   * `name[:tag]` when the workspace has built it here, else a pulled one.
   */
  private async find(reference: string, workspaceId: string | undefined): Promise<StoredImage | undefined> {
    if (isBuiltBaseImage(reference)) return this.baseImage.find();
    const own = parseWorkspaceImage(reference);
    if (own && workspaceId !== undefined) {
      const image = await this.store.findKey(workspaceImageKey(workspaceId, own));
      if (image) return image;
    }
    return this.store.find(reference);
  }

  private async stored(reference: string, workspaceId: string): Promise<StoredImage> {
    if (isBuiltBaseImage(reference)) return this.baseImage.ensure();
    let image: StoredImage | undefined;
    try {
      image = await this.find(reference, workspaceId);
    } catch (err) {
      throw err instanceof ImageReferenceError ? new SandboxSpecError(err.message) : err;
    }
    if (!image && parseImageReference(reference).registry === undefined) {
      // As before images could be pulled: a name of no registry is first of all not a built-in image.
      throw new SandboxSpecError(`image '${reference}' does not exist; available: ${availableImages().join(', ')}, an image of the workspace built on this node, or an image pulled onto this node`);
    }
    if (!image) throw new SandboxSpecError(`image '${reference}' is not on this node: pull it first`);
    return image;
  }

  private loader(): HostLoader {
    this.hostLoader ??= prepareHostLoader(path.join(this.options.dataDir, 'images'), [this.options.nodeBinary], { setpriv: this.options.setprivBinary });
    return this.hostLoader;
  }
}

function runSettings(image: StoredImage, rootWritable: boolean): ImageRunSettings {
  const workingDir = image.config.workingDir && path.posix.isAbsolute(image.config.workingDir) ? path.posix.normalize(image.config.workingDir) : undefined;
  const present = workingDir !== undefined && fs.lstatSync(path.join(image.rootfs, workingDir), { throwIfNoEntry: false })?.isDirectory();
  return { env: image.config.env, ...(present ? { workingDir } : {}), ...(rootWritable ? { rootWritable } : {}) };
}
