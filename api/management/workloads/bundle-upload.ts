import { randomBytes } from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { bundlePaths } from '../../../domain/workloads/bundles';
import { receiveArchive } from '../uploads/archive-upload';

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
  let received: { sha256: string; bytes: number };
  try {
    received = await receiveArchive(body, partial, limitBytes, 'the code bundle', 0o644);
  } catch (err) {
    await fsp.rm(partial, { force: true });
    throw err;
  }
  const { sha256, bytes } = received;
  // Same content, same name: a rename over an existing copy changes nothing.
  await fsp.rename(partial, bundlePaths(dataDir, sha256).archive);
  return { sha256, bytes };
}
