import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { MULTIPART_IDLE_SECONDS, MULTIPART_MAX_PART_BYTES, MULTIPART_MAX_PART_NUMBER } from './contract/limits';
import type { MultipartPartInfo, MultipartUpload, MultipartUploadPartResponse, UploadedPart } from './contract/multipart-upload';
import { HttpError, badRequest } from './http';

/** What an upload becomes, as told at its start, and where its bytes wait. */
interface UploadRecord {
  uploadId: string;
  /** The sandbox path the upload becomes. */
  path: string;
  permissions: number;
  initiatedAt: string;
  /** The real path of the file holding the parts' bytes (see MultipartUploads). */
  dataFile: string;
}

/** What the store needs of the sandbox's files: their policy decides where an upload may go. */
export interface UploadTargets {
  /** The real path a write to `asked` reaches, if writes may go there. */
  resolveWritable(asked: string): Promise<string>;
  makeDirectory(asked: string): Promise<void>;
  /** Writes a file from a stream (the target's own checks apply). */
  writeFile(asked: string, data: Readable, permissions: number): Promise<void>;
}

export interface MultipartUploadsOptions {
  /** An upload that received nothing for this long is deleted by `sweep`. */
  idleMs: number;
  /** The clock `sweep` reads; tests move it instead of waiting. */
  now?: () => number;
}

const UPLOAD_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A received part's marker: `<partNumber>.<etag>.<size>.part`, so its name alone describes it. */
const PART_MARKER = /^(\d+)\.([0-9a-f]{32})\.(\d+)\.part$/;
const RECORD_FILE = 'upload.json';
/** Each part has a slot this big in the data file: the largest part. */
const SLOT_BYTES = MULTIPART_MAX_PART_BYTES;
const COPY_CHUNK_BYTES = 1024 * 1024;

/**
 * Multipart uploads in progress. Each upload has a folder in a place the filesystem API never
 * serves (its record and one empty marker file per part received, named after the part's
 * number, etag and size), and one data file beside its target (`.hangar-upload-<id>`, on the
 * same mount, as the reference keeps its parts beside the target): part n is written at offset
 * (n - 1) x 5 MiB. When every part but the last fills its slot, as the SDK sends them, complete
 * truncates the data file to the file's size and renames it onto the target: no byte is copied
 * again, whatever the size. Other part sizes are copied out slot by slot. Disk state is the whole
 * state, so an upload survives a failed request and a restart of the agent alike.
 *
 * Markers, `complete` and `abort` of one upload take turns, so `complete` never reads a part
 * being replaced and never races an abort. A part is whole or absent: its marker is removed
 * before its slot is written again, and written once the slot holds all of it.
 */
export class MultipartUploads {
  private readonly turns = new Map<string, Promise<unknown>>();
  /** Parts being written now, as `<uploadId>/<partNumber>`: one writer per slot. */
  private readonly writing = new Set<string>();
  private readonly now: () => number;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly dir: string,
    private readonly targets: UploadTargets,
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

  /** Refused at once (403, 400) where the finished file could not be written. */
  async initiate(target: string, permissions: number): Promise<UploadRecord> {
    await this.targets.makeDirectory(path.posix.dirname(target));
    const real = await this.targets.resolveWritable(target);
    const uploadId = randomUUID();
    const record: UploadRecord = { uploadId, path: target, permissions, initiatedAt: new Date(this.now()).toISOString(), dataFile: path.join(path.dirname(real), `.hangar-upload-${uploadId}`) };
    const folder = this.folderOf(uploadId);
    await fsp.mkdir(folder, { recursive: true, mode: 0o700 });
    await fsp.writeFile(path.join(folder, RECORD_FILE), JSON.stringify(record), { mode: 0o600 });
    await fsp.writeFile(record.dataFile, '', { flag: 'wx', mode: 0o600 });
    return record;
  }

  /** Streams one part into its slot; the same part number sent again replaces the earlier one. */
  async putPart(uploadId: string, partNumber: number, data: Readable): Promise<MultipartUploadPartResponse> {
    assertPartNumber(partNumber, "query parameter 'partNumber'");
    const folder = await this.existingFolder(uploadId);
    const slot = `${uploadId}/${partNumber}`;
    if (this.writing.has(slot)) throw new HttpError(409, `part ${partNumber} of upload '${uploadId}' is being uploaded by another request`);
    this.writing.add(slot);
    try {
      const record = await this.inTurn(uploadId, async () => {
        await this.removeMarkers(folder, partNumber);
        return this.record(folder);
      });
      const { etag, size } = await writeSlot(data, record.dataFile, (partNumber - 1) * SLOT_BYTES);
      await this.inTurn(uploadId, async () => {
        // An abort or complete in between removed the folder: the part has nowhere to go.
        await this.existingFolder(uploadId);
        await fsp.writeFile(path.join(folder, markerName({ partNumber, etag, size })), '');
      });
      return { partNumber, etag, size };
    } catch (err) {
      // The upload was aborted or completed while the part streamed in: say so, not ENOENT.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') await this.existingFolder(uploadId);
      throw err;
    } finally {
      this.writing.delete(slot);
    }
  }

  async listParts(uploadId: string): Promise<UploadedPart[]> {
    return this.markers(await this.existingFolder(uploadId));
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
   * answered), makes the file of them in part-number order, then forgets the upload.
   */
  async complete(uploadId: string, listed: MultipartPartInfo[]): Promise<string> {
    return this.inTurn(uploadId, async () => {
      const folder = await this.existingFolder(uploadId);
      const record = await this.record(folder);
      const received = new Map((await this.markers(folder)).map((part) => [part.partNumber, part]));
      const order = checkListedParts(listed, received);
      if (!(await this.placeWhole(record, order))) {
        await this.targets.writeFile(record.path, Readable.from(slots(record.dataFile, order)), record.permissions);
      }
      await this.forget(folder, record);
      return record.path;
    });
  }

  async abort(uploadId: string): Promise<string> {
    return this.inTurn(uploadId, async () => {
      const folder = await this.existingFolder(uploadId);
      const record = await this.record(folder).catch(() => undefined);
      await this.forget(folder, record);
      return record?.path ?? '';
    });
  }

  /**
   * Deletes the uploads that received nothing for `idleMs` (a folder's mtime moves with every
   * part received in it); an upload busy completing, aborting or receiving a part is left alone.
   */
  async sweep(): Promise<string[]> {
    const removed: string[] = [];
    const busy = new Set([...this.turns.keys(), ...[...this.writing].map((slot) => slot.split('/')[0])]);
    for (const uploadId of await this.uploadIds()) {
      if (busy.has(uploadId)) continue;
      const folder = this.folderOf(uploadId);
      const stats = await fsp.stat(folder).catch(() => undefined);
      if (!stats || this.now() - stats.mtimeMs <= this.options.idleMs) continue;
      await this.forget(folder, await this.record(folder).catch(() => undefined));
      removed.push(uploadId);
    }
    return removed;
  }

  /**
   * Parts 1..n, each but the last filling its slot: the data file is the finished file once cut
   * to size, and is renamed onto the target. False when the parts are laid out otherwise, or the
   * target is on another mount than the data file (then the bytes are copied).
   */
  private async placeWhole(record: UploadRecord, order: UploadedPart[]): Promise<boolean> {
    const contiguous = order.every((part, i) => part.partNumber === i + 1 && (i === order.length - 1 || part.size === SLOT_BYTES));
    if (!contiguous) return false;
    const real = await this.targets.resolveWritable(record.path);
    const last = order[order.length - 1];
    await fsp.truncate(record.dataFile, (last.partNumber - 1) * SLOT_BYTES + last.size);
    await fsp.chmod(record.dataFile, record.permissions);
    try {
      await fsp.rename(record.dataFile, real);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EXDEV') return false;
      throw err;
    }
  }

  private async forget(folder: string, record: UploadRecord | undefined): Promise<void> {
    if (record) await fsp.rm(record.dataFile, { force: true });
    await fsp.rm(folder, { recursive: true, force: true });
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
    const [{ dataFile: _internal, ...record }, parts] = await Promise.all([this.record(folder), this.markers(folder)]);
    return { ...record, parts: Object.fromEntries(parts.map((part) => [String(part.partNumber), part])) };
  }

  private async uploadIds(): Promise<string[]> {
    const names = await fsp.readdir(this.dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    });
    return names.filter((name) => UPLOAD_ID.test(name));
  }

  /** The parts received, by part number, read from their markers' names. */
  private async markers(folder: string): Promise<UploadedPart[]> {
    const parts: UploadedPart[] = [];
    for (const name of await fsp.readdir(folder)) {
      const match = PART_MARKER.exec(name);
      if (!match) continue;
      const stats = await fsp.stat(path.join(folder, name)).catch(() => undefined);
      if (stats) parts.push({ partNumber: Number(match[1]), etag: match[2], size: Number(match[3]), uploadedAt: stats.mtime.toISOString() });
    }
    return parts.sort((a, b) => a.partNumber - b.partNumber);
  }

  private async removeMarkers(folder: string, partNumber: number): Promise<void> {
    const stale = (await this.markers(folder)).filter((part) => part.partNumber === partNumber);
    await Promise.all(stale.map((part) => fsp.rm(path.join(folder, markerName(part)), { force: true })));
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

const markerName = (part: { partNumber: number; etag: string; size: number }) => `${part.partNumber}.${part.etag}.${part.size}.part`;

/**
 * Writes a part's bytes at `offset` of the data file, computing its etag on the way: the first
 * 128 bits of their SHA-256, in hex (an etag is opaque to clients; SHA-256 runs at several times
 * MD5's speed on CPUs with SHA extensions, and hashing is most of an upload's CPU time).
 */
async function writeSlot(data: Readable, dataFile: string, offset: number): Promise<{ etag: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  const measure = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      if (size > SLOT_BYTES) return done(new HttpError(413, `a part is at most ${SLOT_BYTES} bytes`));
      hash.update(chunk);
      done(null, chunk);
    },
  });
  await pipeline(data, measure, createWriteStream(dataFile, { flags: 'r+', start: offset }));
  return { etag: hash.digest('hex').slice(0, 32), size };
}

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

/** The parts' bytes from their slots, one after the other, read in large chunks. */
async function* slots(dataFile: string, parts: UploadedPart[]): AsyncGenerator<Buffer> {
  for (const part of parts) {
    if (part.size === 0) continue;
    const start = (part.partNumber - 1) * SLOT_BYTES;
    for await (const chunk of createReadStream(dataFile, { start, end: start + part.size - 1, highWaterMark: COPY_CHUNK_BYTES })) yield chunk as Buffer;
  }
}

/**
 * The sandbox's uploads: their records below the agent's run folder (hidden from the filesystem
 * API), swept for abandoned ones every hour.
 */
export function openMultipartUploads(runDir: string, targets: UploadTargets): MultipartUploads {
  const uploads = new MultipartUploads(path.join(runDir, 'multipart-uploads'), targets, { idleMs: MULTIPART_IDLE_SECONDS * 1000 });
  uploads.startSweeping(Math.min(MULTIPART_IDLE_SECONDS * 1000, 3600_000));
  return uploads;
}
