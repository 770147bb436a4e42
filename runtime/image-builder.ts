import { createHash, randomBytes } from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import * as tar from 'tar';
import { contextEntryProblem } from '../domain/images/build-context';
import { parseDockerfile, rewriteDockerfile, type BaseImage } from '../domain/images/dockerfile';
import { buildahBuild, buildahPush, type BuildahOptions, type BuildStep } from './buildah';
import type { OciImageStore, StoredImage } from './image-store';

export interface ImageBuilderOptions {
  /** `<dataDir>/images`: buildah's storage and the builds' work folders go under it. */
  imagesDir: string;
  store: OciImageStore;
  buildahPath?: string;
  unsharePath?: string;
  /** buildah's storage driver: overlay by default (vfs copies every layer, for file systems overlay cannot sit on). */
  storageDriver?: string;
}

export interface ImageBuild {
  /** The store key the image is filed under (workspaceImageKey), and the record it is filed for. */
  key: string;
  owner: string;
  /** The uploaded context, a tar.gz with a Dockerfile at its root (checked by the API, checked again here). */
  contextArchive: string;
  /** The stored image a FROM of the workspace or of a registry builds on (pulled first for a registry). */
  resolveBase: (base: BaseImage) => Promise<StoredImage>;
  onStep: (step: BuildStep) => void;
}

/** A context or Dockerfile that cannot be built, whatever retrying does; the message says why. */
export class BuildInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BuildInputError';
  }
}

/**
 * Builds images from Dockerfiles on this node with buildah (no daemon), into the node's image
 * store: the context is unpacked into a folder of the build's own, each FROM is pointed at the
 * store's copy of its image, buildah builds with its step cache, and the result is pushed into
 * a layout whose blobs are the store's, then unpacked and filed under the build's key.
 */
export class ImageBuilder {
  constructor(private readonly options: ImageBuilderOptions) {}

  async build(build: ImageBuild): Promise<StoredImage> {
    const workDir = path.join(this.options.imagesDir, 'builds', randomBytes(8).toString('hex'));
    await fsp.mkdir(path.join(workDir, 'context'), { recursive: true, mode: 0o700 });
    try {
      await unpackContext(build.contextArchive, path.join(workDir, 'context'));
      const text = await fsp.readFile(path.join(workDir, 'context', 'Dockerfile'), 'utf8').catch(() => {
        throw new BuildInputError('the build context has no Dockerfile at its root');
      });
      const parsed = (() => {
        try {
          return parseDockerfile(text);
        } catch (err) {
          throw new BuildInputError((err as Error).message);
        }
      })();
      const buildah = await this.buildahOptions(workDir);
      const bases = new Map<string, string>();
      for (const base of parsed.bases.filter((b) => b.kind === 'workspace' || b.kind === 'registry')) {
        const layout = await this.options.store.layoutOf(await build.resolveBase(base));
        bases.set(base.reference, `oci:${path.relative(buildah.cwd, layout.dir)}:${layout.tag}`);
      }
      const dockerfile = path.join(workDir, 'Dockerfile.hangar');
      await fsp.writeFile(dockerfile, rewriteDockerfile(parsed, bases));
      // One buildah tag per key, reused by every build of it: the previous result is replaced, its layers stay cached.
      const tag = `localhost/hangar/${createHash('sha256').update(build.key).digest('hex').slice(0, 24)}:build`;
      const id = await buildahBuild(buildah, { dockerfile, contextDir: path.join(workDir, 'context'), tag, onStep: build.onStep });
      // Nothing changed since this record's last build (every step cached): the stored image is the result.
      const unchanged = await this.options.store.findKey(build.key, build.owner);
      if (unchanged?.configDigest === id) return unchanged;
      const layoutDir = path.join(workDir, 'layout');
      await fsp.mkdir(layoutDir, { mode: 0o700 });
      await fsp.symlink(path.relative(layoutDir, await this.options.store.blobsDir()), path.join(layoutDir, 'blobs'));
      await buildahPush(buildah, { tag, layoutDir, layoutTag: 'image' });
      return await this.options.store.importLayout(build.key, layoutDir, 'image', build.owner);
    } finally {
      await fsp.rm(workDir, { recursive: true, force: true });
    }
  }

  private async buildahOptions(workDir: string): Promise<BuildahOptions> {
    const root = path.join(this.options.imagesDir, 'buildah');
    await fsp.mkdir(root, { recursive: true, mode: 0o700 });
    const storeRoot = path.dirname(await this.options.store.blobsDir());
    return {
      cwd: storeRoot,
      buildahPath: this.options.buildahPath ?? 'buildah',
      unsharePath: this.options.unsharePath ?? 'unshare',
      root: path.join(root, 'storage'),
      runroot: path.join(root, 'run'),
      storageDriver: this.options.storageDriver ?? 'overlay',
      policyFile: path.join(storeRoot, 'policy.json'),
      workDir,
    };
  }
}

/** Checks every entry of the context again (the node trusts no upload), then unpacks it, owners dropped. */
async function unpackContext(archive: string, dir: string): Promise<void> {
  const problems: string[] = [];
  try {
    await tar.t({ file: archive, strict: true, onReadEntry: (entry) => {
      const problem = contextEntryProblem(entry.path, entry.type, entry.linkpath);
      if (problem) problems.push(problem);
      entry.resume();
    } });
  } catch (err) {
    throw new BuildInputError(`the build context is not a readable tar.gz archive (${(err as Error).message})`);
  }
  if (problems.length > 0) throw new BuildInputError(`bad build context: ${problems.slice(0, 3).join('; ')}`);
  await tar.x({ file: archive, cwd: dir, strict: true, preserveOwner: false } as tar.TarOptionsWithAliasesAsyncFile);
}
