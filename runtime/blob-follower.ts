import fsp, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { extractLayer, gunzip } from './layer-extract';

/** A layer extracted while skopeo wrote it: the folder, and the identity of the file it was read from. */
export interface FollowedBlob {
  dir: string;
  dev: number;
  ino: number;
  size: number;
}

/** skopeo's `oci:` destination writes each blob to a file of this prefix in the layout, then renames it into `blobs/` once whole and checked. */
const TEMPORARY_BLOB = /^oci-put-blob/;
const GZIP_MAGIC = [0x1f, 0x8b];
const CHUNK = 1 << 20;
const POLL_MS = 5;

/**
 * Extracts gzip layers while skopeo copies them into an OCI layout, so gunzip and writing the
 * files overlap the download instead of following it. It watches the layout for skopeo's
 * temporary blob files, reads each as it grows and pipes it into a layer extraction; a file is
 * whole once skopeo renames it into `blobs/` (which it does only after checking its digest).
 *
 * Nothing here decides what a layer is: the caller matches a followed file to a layer of the
 * manifest by its inode (the renamed blob is the very file that was read), so a file that was
 * abandoned, failed, or not followed at all (a blob already stored is not copied) is simply
 * extracted from the store after the copy. This is an optimisation on skopeo's file naming; if
 * that naming changes, pulls stay correct and only lose the overlap.
 */
export class BlobFollower {
  private readonly followed = new Set<string>();
  private readonly follows: Promise<FollowedBlob | undefined>[] = [];
  private copyEnded = false;
  private watching?: Promise<void>;

  constructor(
    private readonly layoutDir: string,
    private readonly extractDir: string,
    /** Told of every chunk of layer bytes read, and of every layer extracted whole (a pull's progress). */
    private readonly progress: { bytes(count: number): void; layer(): void } = { bytes: () => undefined, layer: () => undefined },
  ) {}

  start(): void {
    this.watching = this.watch();
  }

  /** Once the copy has ended (well or not): the layers extracted whole. */
  async finish(): Promise<FollowedBlob[]> {
    this.copyEnded = true;
    await this.watching;
    const results = await Promise.all(this.follows);
    return results.filter((result): result is FollowedBlob => result !== undefined);
  }

  private async watch(): Promise<void> {
    await fsp.mkdir(this.extractDir, { recursive: true, mode: 0o700 });
    while (!this.copyEnded) {
      for (const name of await fsp.readdir(this.layoutDir).catch(() => [] as string[])) {
        if (!TEMPORARY_BLOB.test(name) || this.followed.has(name)) continue;
        this.followed.add(name);
        this.follows.push(this.follow(path.join(this.layoutDir, name), path.join(this.extractDir, String(this.followed.size))));
      }
      await sleep(POLL_MS);
    }
  }

  private async follow(file: string, dir: string): Promise<FollowedBlob | undefined> {
    const handle = await fsp.open(file, 'r').catch(() => undefined);
    if (!handle) return undefined;
    try {
      const head = Buffer.alloc(GZIP_MAGIC.length);
      if (!(await this.readAt(handle, file, head)) || !GZIP_MAGIC.every((byte, i) => head[i] === byte)) return undefined;
      let read = 0;
      const source = Readable.from(this.tail(handle, file, (bytes) => (read += bytes)), { objectMode: false });
      await extractLayer(source, gunzip(), dir);
      const stat = await handle.stat();
      if (read !== stat.size) throw new Error('the blob changed after it was read');
      this.progress.layer();
      return { dir, dev: stat.dev, ino: stat.ino, size: stat.size };
    } catch {
      // Not a layer this can extract, or a copy that failed: the store's blob is extracted after the copy instead.
      await fsp.rm(dir, { recursive: true, force: true });
      return undefined;
    } finally {
      await handle.close();
    }
  }

  /** Fills `buffer` from the start of the file as it is written; false when the file ends or goes first. */
  private async readAt(handle: FileHandle, file: string, buffer: Buffer): Promise<boolean> {
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      if (bytesRead === buffer.length) return true;
      if (this.copyEnded || !(await exists(file))) return false;
      await sleep(POLL_MS);
    }
  }

  /** The file's bytes as skopeo writes them, to the end once it has been renamed away (then it is whole). */
  private async *tail(handle: FileHandle, file: string, count: (bytes: number) => void): AsyncGenerator<Buffer> {
    let position = 0;
    let renamed = false;
    for (;;) {
      const buffer = Buffer.allocUnsafe(CHUNK);
      const { bytesRead } = await handle.read(buffer, 0, CHUNK, position);
      if (bytesRead > 0) {
        position += bytesRead;
        count(bytesRead);
        this.progress.bytes(bytesRead);
        yield buffer.subarray(0, bytesRead);
        continue;
      }
      if (renamed) return;
      // Checked before the next read: everything written before the rename is then readable.
      renamed = !(await exists(file));
      if (renamed) continue;
      if (this.copyEnded) throw new Error('the copy ended with this blob unfinished');
      await sleep(POLL_MS);
    }
  }
}

function exists(file: string): Promise<boolean> {
  return fsp.lstat(file).then(
    () => true,
    () => false,
  );
}
