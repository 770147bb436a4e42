import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { bundlePaths } from '../../../domain/workloads/bundles';
import { ApiError, badRequest } from '../../../domain/errors';

export interface StoredBundle {
  sha256: string;
  bytes: number;
}

/**
 * Streams an uploaded bundle to disk while hashing it, then files it under its digest. Nothing is
 * held in memory; a body over `limitBytes` is cut off with 413 and its partial file removed.
 * Checking the archive's contents is the deployment's BUILDING step, so a bad bundle shows up
 * as a FAILED deployment with its reason.
 */
export async function storeBundle(dataDir: string, body: Readable, limitBytes: number): Promise<StoredBundle> {
  const root = path.join(dataDir, 'bundles');
  await fsp.mkdir(root, { recursive: true, mode: 0o755 });
  const partial = path.join(root, `.upload-${process.pid}-${randomBytes(6).toString('hex')}`);
  const hash = createHash('sha256');
  let bytes = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      if (bytes > limitBytes) return done(new ApiError(413, 'payload_too_large', `the code bundle is larger than the limit of ${limitBytes} bytes`));
      hash.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(body, meter, fs.createWriteStream(partial, { mode: 0o644 }));
  } catch (err) {
    await fsp.rm(partial, { force: true });
    if (err instanceof ApiError) throw err;
    throw badRequest(`the code bundle could not be read: ${(err as Error).message}`);
  }
  if (bytes === 0) {
    await fsp.rm(partial, { force: true });
    throw badRequest('body: the code bundle is empty; send a tar.gz archive');
  }
  const sha256 = hash.digest('hex');
  // Same content, same name: a rename over an existing copy changes nothing.
  await fsp.rename(partial, bundlePaths(dataDir, sha256).archive);
  return { sha256, bytes };
}
