import fs from 'node:fs';
import path from 'node:path';
import { ImageReferenceError, parseImageReference } from '../domain/images/reference';
import { prepareHostLoader, type HostLoader } from './host-loader';
import { ImageCatalog, availableImages, imageExists, type ImageRunSettings, type ResolvedImage } from './image';
import { buildImageEtc } from './image-etc';
import { OciImageStore, type StoredImage } from './image-store';
import type { RegistryCredentials } from './skopeo';
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
}

/**
 * The images a node runs sandboxes from: the built-in ones (the host's own folders, image.ts),
 * answering to their names as before, and any other reference, an OCI image pulled from its
 * registry into the node's store (image-store.ts). A reference is built-in when its name is one
 * (`base`, `base-image`, whatever registry, namespace or tag it is written with), so those names
 * cannot be pulled.
 */
export class SandboxImages {
  readonly store: OciImageStore;
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
  }

  isBuiltin(reference: string): boolean {
    return imageExists(reference);
  }

  /** Pulls an image from its registry into the node's store (see OciImageStore.pull). */
  pull(reference: string, options: { credentials?: RegistryCredentials } = {}): Promise<StoredImage> {
    if (this.isBuiltin(reference)) return Promise.reject(new SandboxSpecError(`image '${reference}' is built in: there is nothing to pull`));
    return this.store.pull(reference, options).catch((err: unknown) => {
      throw err instanceof ImageReferenceError ? new SandboxSpecError(err.message) : err;
    });
  }

  /** Throws a SandboxSpecError naming the problem when the reference cannot run here now: malformed, or not pulled. */
  async check(reference: string): Promise<void> {
    if (this.isBuiltin(reference)) this.builtins.resolve(reference);
    else await this.stored(reference);
  }

  /**
   * The read-only tree of one sandbox: for a pulled image it depends on the sandbox, whose own
   * folders and volumes (`owned`) take their places in the image's tree.
   */
  async resolve(reference: string, owned: string[]): Promise<ResolvedImage> {
    if (this.isBuiltin(reference)) return this.builtins.resolve(reference);
    const image = await this.stored(reference);
    return {
      name: image.reference,
      mounts: rootfsMounts(image.rootfs, owned),
      etcDir: buildImageEtc(image.dir, image.rootfs, this.options.identity),
      hostLoader: this.loader(),
      run: runSettings(image),
    };
  }

  /** What the image asks of its processes; undefined for a built-in image. */
  async runSettings(reference: string): Promise<ImageRunSettings | undefined> {
    return this.isBuiltin(reference) ? undefined : runSettings(await this.stored(reference));
  }

  /** Bytes the platform stores for the image (nothing for a built-in one; see ImageDefinition.storedBytes). */
  async storedBytes(reference: string): Promise<number> {
    if (this.isBuiltin(reference)) return this.builtins.storedBytes(reference);
    return (await this.store.find(reference).catch(() => undefined))?.storedBytes ?? 0;
  }

  private async stored(reference: string): Promise<StoredImage> {
    let image: StoredImage | undefined;
    try {
      image = await this.store.find(reference);
    } catch (err) {
      throw err instanceof ImageReferenceError ? new SandboxSpecError(err.message) : err;
    }
    if (!image && parseImageReference(reference).registry === undefined) {
      // As before images could be pulled: a name of no registry is first of all not a built-in image.
      throw new SandboxSpecError(`image '${reference}' does not exist; available: ${availableImages().join(', ')}, or an image pulled onto this node`);
    }
    if (!image) throw new SandboxSpecError(`image '${reference}' is not on this node: pull it first`);
    return image;
  }

  private loader(): HostLoader {
    this.hostLoader ??= prepareHostLoader(path.join(this.options.dataDir, 'images'), [this.options.nodeBinary], { setpriv: this.options.setprivBinary });
    return this.hostLoader;
  }
}

function runSettings(image: StoredImage): ImageRunSettings {
  const workingDir = image.config.workingDir && path.posix.isAbsolute(image.config.workingDir) ? path.posix.normalize(image.config.workingDir) : undefined;
  const present = workingDir !== undefined && fs.lstatSync(path.join(image.rootfs, workingDir), { throwIfNoEntry: false })?.isDirectory();
  return { env: image.config.env, ...(present ? { workingDir } : {}) };
}
