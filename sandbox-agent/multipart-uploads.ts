import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { MULTIPART_IDLE_SECONDS, MULTIPART_MAX_PART_NUMBER } from './contract/limits';
import type { MultipartPartInfo, MultipartUpload, MultipartUploadPartResponse, UploadedPart } from './contract/multipart-upload';
import { HttpError, badRequest } from './http';

/** What an upload becomes, as told at its start. */
interface UploadRecord {
  uploadId: string;
  path: string;
  permissions: number;
  initiatedAt: string;
}

export interface MultipartUploadsOptions {
  /** An upload that received nothing for this long is deleted by `sweep`. */
  idleMs: number;
  /** The clock `sweep` reads; tests move it instead of waiting. */
  now?: () => number;
}

/** Writes the assembled file: the target's own checks (writable, no symlink swapped in) apply. */
export type WriteAssembled = (target: string, data: Readable, permissions: number) => Promise<void>;

const UPLOAD_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A finished part's file: `<partNumber>.<etag>.part`, so its name alone describes it. */
const PART_FILE = /^(\d+)\.([0-9a-f]{32})\.part$/;
const RECORD_FILE = 'upload.json';
const COPY_CHUNK_BYTES = 1024 * 1024;

/**
 * Multipart uploads in progress, kept in a folder of the sandbox that the filesystem API never
 * serves: one folder per upload, holding its record and one file per part received. The folder
 * is the whole state, so an upload survives a failed request and a restart of the agent alike.
 *
 * Parts stream to a temporary file while their MD5 is computed, then are renamed to their final
 * name (which carries the part number and etag): a part is either whole or absent, and sending a
 * part number again replaces it. Renames, `complete` and `abort` of one upload take turns, so
 * `complete` never reads a part being replaced and never races an abort.
 */
export class MultipartUploads {
  private readonly turns = new Map<string, Promise<unknown>>();
  private readonly now: () => number;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly dir: string,
    private readonly options: MultipartUploadsOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /** Deletes abandoned uploads now and then (the timer does not keep the agent alive). */
  startSweeping(intervalMs: number): void {
    const sweep = () => void this.sweep().catch((err: Error) => process.stderr.write(`sandbox api: multipart sweep: ${err.message}\n`));
    sweep();
    this.sweeper = setInterval(sweep, intervalMs);
    this.sweeper.unref();
  }

  stopSweeping(): void {
    clearInterval(this.sweeper);
  }

  async initiate(target: string, permissions: number): Promise<UploadRecord> {
    const record: UploadRecord = { uploadId: randomUUID(), path: target, permissions, initiatedAt: new Date(this.now()).toISOString() };
    const folder = this.folderOf(record.uploadId);
    await fsp.mkdir(folder, { recursive: true, mode: 0o700 });
    await fsp.writeFile(path.join(folder, RECORD_FILE), JSON.stringify(record), { mode: 0o600 });
    return record;
  }

  /** Streams one part to disk; the same part number sent again replaces the earlier one. */
  async putPart(uploadId: string, partNumber: number, data: Readable): Promise<MultipartUploadPartResponse> {
    assertPartNumber(partNumber, "query parameter 'partNumber'");
    const folder = await this.existingFolder(uploadId);
    const temporary = path.join(folder, `${partNumber}.${randomUUID()}.tmp`);
    const md5 = createHash('md5');
    let size = 0;
    const measure = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        md5.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    try {
      await pipeline(data, measure, createWriteStream(temporary, { flags: 'wx', mode: 0o600 }));
      const etag = md5.digest('hex');
      await this.inTurn(uploadId, async () => {
        // An abort or complete in between removed the folder: the part has nowhere to go.
        await this.existingFolder(uploadId);
        const earlier = (await this.partFiles(folder)).filter((part) => part.partNumber === partNumber);
        await fsp.rename(temporary, path.join(folder, partFileName(partNumber, etag)));
        await Promise.all(earlier.filter((part) => part.etag !== etag).map((part) => fsp.rm(path.join(folder, partFileName(part.partNumber, part.etag)), { force: true })));
      });
      return { partNumber, etag, size };
    } catch (err) {
      // The upload was aborted or completed while the part streamed in: say so, not ENOENT.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') await this.existingFolder(uploadId);
      throw err;
    } finally {
      await fsp.rm(temporary, { force: true });
    }
  }

  async listParts(uploadId: string): Promise<UploadedPart[]> {
    return this.partFiles(await this.existingFolder(uploadId));
  }

  async list(): Promise<MultipartUpload[]> {
    const uploads: MultipartUpload[] = [];
    for (const uploadId of await this.uploadIds()) {
      const upload = await this.describe(uploadId).catch(() => undefined);
      if (upload) uploads.push(upload);
    }
    return uploads.sort((a, b) => a.initiatedAt.localeCompare(b.initiatedAt));
  }

  /**
   * Checks the listed parts against those received (each present, with the etag its upload
   * answered), writes them in part-number order through `write`, then forgets the upload.
   */
  async complete(uploadId: string, listed: MultipartPartInfo[], write: WriteAssembled): Promise<string> {
    return this.inTurn(uploadId, async () => {
      const folder = await this.existingFolder(uploadId);
      const record = await this.record(folder);
      const received = new Map((await this.partFiles(folder)).map((part) => [part.partNumber, part]));
      const order = checkListedParts(listed, received);
      await write(record.path, Readable.from(concatenate(order.map((part) => path.join(folder, partFileName(part.partNumber, part.etag))))), record.permissions);
      await fsp.rm(folder, { recursive: true, force: true });
      return record.path;
    });
  }

  async abort(uploadId: string): Promise<string> {
    return this.inTurn(uploadId, async () => {
      const folder = await this.existingFolder(uploadId);
      const record = await this.record(folder).catch(() => undefined);
      await fsp.rm(folder, { recursive: true, force: true });
      return record?.path ?? '';
    });
  }

  /**
   * Deletes the uploads that received nothing for `idleMs` (a folder's mtime moves with every
   * part started or finished in it); an upload busy completing or aborting is left alone.
   */
  async sweep(): Promise<string[]> {
    const removed: string[] = [];
    for (const uploadId of await this.uploadIds()) {
      if (this.turns.has(uploadId)) continue;
      const folder = this.folderOf(uploadId);
      const stats = await fsp.stat(folder).catch(() => undefined);
      if (!stats || this.now() - stats.mtimeMs <= this.options.idleMs) continue;
      await fsp.rm(folder, { recursive: true, force: true });
      removed.push(uploadId);
    }
    return removed;
  }

  private folderOf(uploadId: string): string {
    return path.join(this.dir, uploadId);
  }

  /** The upload's folder; an id initiate never gave (or one since finished) is a 404. */
  private async existingFolder(uploadId: string): Promise<string> {
    const unknown = new HttpError(404, `no multipart upload with uploadId '${UPLOAD_ID.test(uploadId) ? uploadId : '(not an upload id)'}'`);
    if (!UPLOAD_ID.test(uploadId)) throw unknown;
    const folder = this.folderOf(uploadId);
    const stats = await fsp.stat(folder).catch(() => undefined);
    if (!stats?.isDirectory()) throw unknown;
    return folder;
  }

  private async record(folder: string): Promise<UploadRecord> {
    return JSON.parse(await fsp.readFile(path.join(folder, RECORD_FILE), 'utf8')) as UploadRecord;
  }

  private async describe(uploadId: string): Promise<MultipartUpload> {
    const folder = this.folderOf(uploadId);
    const [record, parts] = await Promise.all([this.record(folder), this.partFiles(folder)]);
    return { ...record, parts: Object.fromEntries(parts.map((part) => [String(part.partNumber), part])) };
  }

  private async uploadIds(): Promise<string[]> {
    const names = await fsp.readdir(this.dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    });
    return names.filter((name) => UPLOAD_ID.test(name));
  }

  /** The finished parts in a folder, by part number, read from their file names. */
  private async partFiles(folder: string): Promise<UploadedPart[]> {
    const parts: UploadedPart[] = [];
    for (const name of await fsp.readdir(folder)) {
      const match = PART_FILE.exec(name);
      if (!match) continue;
      const stats = await fsp.stat(path.join(folder, name)).catch(() => undefined);
      if (stats) parts.push({ partNumber: Number(match[1]), etag: match[2], size: stats.size, uploadedAt: stats.mtime.toISOString() });
    }
    return parts.sort((a, b) => a.partNumber - b.partNumber);
  }

  /** Runs `step` once every earlier step for the same upload has settled. */
  private async inTurn<T>(uploadId: string, step: () => Promise<T>): Promise<T> {
    const before = this.turns.get(uploadId) ?? Promise.resolve();
    const mine = before.then(step, step);
    const settled = mine.catch(() => undefined);
    this.turns.set(uploadId, settled);
    try {
      return await mine;
    } finally {
      if (this.turns.get(uploadId) === settled) this.turns.delete(uploadId);
    }
  }
}

const partFileName = (partNumber: number, etag: string) => `${partNumber}.${etag}.part`;

function assertPartNumber(value: unknown, name: string): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MULTIPART_MAX_PART_NUMBER) {
    throw badRequest(`${name} must be an integer from 1 to ${MULTIPART_MAX_PART_NUMBER}`);
  }
}

/**
 * The parts `complete` lists, checked against those received and put in part-number order. Each
 * refusal names the entry of `parts` at fault.
 */
export function checkListedParts(listed: MultipartPartInfo[], received: ReadonlyMap<number, UploadedPart>): UploadedPart[] {
  if (listed.length === 0) throw badRequest("'parts' must list at least one part");
  const seen = new Set<number>();
  const order = listed.map((entry, i) => {
    const at = `parts[${i}]`;
    assertPartNumber(entry.partNumber, `'${at}.partNumber'`);
    if (seen.has(entry.partNumber)) throw badRequest(`'${at}.partNumber': part ${entry.partNumber} is listed twice`);
    seen.add(entry.partNumber);
    const part = received.get(entry.partNumber);
    if (!part) throw badRequest(`'${at}.partNumber': part ${entry.partNumber} was not uploaded`);
    if (part.etag !== normalEtag(entry.etag)) throw badRequest(`'${at}.etag' does not match part ${entry.partNumber} as uploaded`);
    return part;
  });
  return order.sort((a, b) => a.partNumber - b.partNumber);
}

/** An etag as clients send it back: S3 habits quote it, and hex case does not matter. */
function normalEtag(etag: unknown): string | undefined {
  return typeof etag === 'string' ? etag.replace(/^"(.*)"$/, '$1').toLowerCase() : undefined;
}

/** The bytes of the files one after the other, read in large chunks. */
async function* concatenate(files: string[]): AsyncGenerator<Buffer> {
  for (const file of files) {
    for await (const chunk of createReadStream(file, { highWaterMark: COPY_CHUNK_BYTES })) yield chunk as Buffer;
  }
}

/**
 * The sandbox's uploads, below the agent's run folder (hidden from the filesystem API, on disk
 * beside the sandbox's files), swept for abandoned ones every hour.
 */
export function openMultipartUploads(runDir: string): MultipartUploads {
  const uploads = new MultipartUploads(path.join(runDir, 'multipart-uploads'), { idleMs: MULTIPART_IDLE_SECONDS * 1000 });
  uploads.startSweeping(Math.min(MULTIPART_IDLE_SECONDS * 1000, 3600_000));
  return uploads;
}
