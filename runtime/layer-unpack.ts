import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { OciManifest } from '../domain/images/oci-image';
import type { FollowedBlob } from './blob-follower';
import { extractLayer, layerDecompressor } from './layer-extract';
import { applyLayers } from './layer-merge';

export interface LayerUnpack {
  manifest: OciManifest;
  /** Where the store keeps a blob (already checked against its digest by skopeo or the builder's push). */
  blobFile(digest: string): string;
  /** Layers already extracted during the copy (blob-follower.ts); consumed by this unpack. */
  followed: FollowedBlob[];
  /** A folder for the other layers' extraction, on the file system of `rootfs`. */
  layersDir: string;
  /** The image's rootfs to make (must not exist). */
  rootfs: string;
}

/** Layers extracted at once: this is gunzip and file writing, and nodes have few cores. */
const PARALLEL_LAYERS = 2;

/**
 * Unpacks an image's layers into its rootfs: each layer extracted into a folder of its own (the
 * ones followed during the copy are taken as they are, matched to the manifest by the stored
 * blob's inode; the others are extracted from the store, two at a time), then merged in order
 * applying whiteouts (layer-merge.ts). Blobs are not hashed again: skopeo checked each against its
 * digest before storing it.
 */
export async function unpackLayers(unpack: LayerUnpack): Promise<void> {
  const followed = [...unpack.followed];
  const dirs: string[] = new Array<string>(unpack.manifest.layers.length);
  const pending: number[] = [];
  for (const [index, layer] of unpack.manifest.layers.entries()) {
    const stat = await fsp.stat(unpack.blobFile(layer.digest));
    const match = /[+.]gzip$/.test(layer.mediaType) ? followed.findIndex((blob) => blob.dev === stat.dev && blob.ino === stat.ino && blob.size === stat.size) : -1;
    if (match >= 0) dirs[index] = followed.splice(match, 1)[0].dir;
    else pending.push(index);
  }
  await fsp.mkdir(unpack.layersDir, { recursive: true, mode: 0o700 });
  const lane = async () => {
    for (let index = pending.shift(); index !== undefined; index = pending.shift()) {
      const layer = unpack.manifest.layers[index];
      const dir = path.join(unpack.layersDir, `layer-${index}`);
      await extractLayer(fs.createReadStream(unpack.blobFile(layer.digest), { highWaterMark: 1 << 20 }), layerDecompressor(layer.mediaType), dir);
      dirs[index] = dir;
    }
  };
  // Both lanes end before an error is thrown: the caller removes the folders they write into.
  const failed = (await Promise.allSettled(Array.from({ length: PARALLEL_LAYERS }, lane))).find((lane) => lane.status === 'rejected');
  if (failed) throw failed.reason;
  await applyLayers(dirs, unpack.rootfs);
}
