import { spawn } from 'node:child_process';
import fsp from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type { Readable, Transform } from 'node:stream';
import zlib from 'node:zlib';

/** A layer this code cannot extract itself (zstd without Node's support, an unknown type): the caller unpacks the image another way. */
export class UnsupportedLayerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedLayerError';
  }
}

/**
 * The decompressor of a layer by its media type (OCI's and Docker's names, `+gzip`/`.gzip`,
 * `+zstd`, plain tar); undefined for a plain tar.
 */
export function layerDecompressor(mediaType: string): Transform | undefined {
  if (/[+.]gzip$/.test(mediaType)) return gunzip();
  if (/\+zstd$/.test(mediaType)) {
    const zstd = (zlib as unknown as { createZstdDecompress?: () => Transform }).createZstdDecompress;
    if (!zstd) throw new UnsupportedLayerError(`layers of type ${mediaType} need a Node with zstd`);
    return zstd();
  }
  if (/\.tar$/.test(mediaType)) return undefined;
  throw new UnsupportedLayerError(`layers of type '${mediaType}' are not known`);
}

/** Node's zlib (faster here than gzip, pigz or umoci's Go gunzip for one stream), in large chunks. */
export function gunzip(): Transform {
  return zlib.createGunzip({ chunkSize: 1 << 20 });
}

/**
 * Extracts one layer's tar stream into `dir` (made here, 0755) with GNU tar, as the layer has
 * it: numeric owners, modes with setuid bits, times, device nodes (the caller runs as root).
 * Whiteout files (`.wh.*`) are extracted as the empty files they are: applying them is the
 * merge's (layer-merge.ts), which knows the layers below. GNU tar refuses members with `..` or
 * absolute names, and holds back links pointing outside until the end, so a member cannot be
 * written through a link of the same layer to outside `dir`. Rejects with tar's last line.
 */
export async function extractLayer(source: Readable, decompressor: Transform | undefined, dir: string): Promise<void> {
  await fsp.mkdir(dir, { mode: 0o755 });
  const tar = spawn('tar', ['-x', '--numeric-owner', '--same-owner', '--same-permissions', '--xattrs', '--xattrs-include=security.capability', '--xattrs-include=user.*', '-C', dir, '-f', '-'], {
    stdio: ['pipe', 'ignore', 'pipe'],
    env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' },
  });
  let stderr = '';
  tar.stderr.setEncoding('utf8');
  tar.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4096);
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    tar.once('error', reject);
    tar.once('close', (code) => resolve(code));
  });
  const streams: (Readable | Transform | NodeJS.WritableStream)[] = decompressor ? [source, decompressor, tar.stdin] : [source, tar.stdin];
  // tar may stop reading after the archive's end blocks; its exit status is what counts then.
  const fed = (pipeline as (...s: unknown[]) => Promise<void>)(...streams).then(
    () => undefined,
    (err: Error) => err,
  );
  const [code, feedError] = await Promise.all([exited, fed]);
  if (code !== 0) throw new Error(`tar could not extract the layer: ${stderr.trim().split('\n').pop() ?? `exit ${code}`}`);
  if (feedError && (feedError as NodeJS.ErrnoException).code !== 'EPIPE') throw feedError;
}
