import { once } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import { HttpError, badRequest } from './http';

const MAX_HEADER_BYTES = 16 * 1024;
const MAX_TEXT_FIELD_BYTES = 64 * 1024;

/** The boundary of a multipart/form-data content type, if it is one. */
export function multipartBoundary(contentType: string | undefined): string | undefined {
  if (!contentType || !/^multipart\/form-data\b/i.test(contentType)) return undefined;
  const match = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  if (!match) throw badRequest('multipart/form-data without a boundary');
  return match[1] ?? match[2];
}

interface Part {
  name: string;
  /** The file part's bytes, on their way to `onFile`. */
  file?: PassThrough;
  written?: Promise<void>;
  /** A text field's bytes. */
  text: Buffer[];
  size: number;
}

/**
 * The parser's state across chunks: the bytes not yet consumed, where in the body it stands,
 * and the part being read. Each step consumes what it can and says whether another may follow.
 */
class MultipartReader {
  readonly fields = new Map<string, string>();
  sawFile = false;
  private readonly delimiter: Buffer;
  // The first delimiter has no CRLF before it; adding one lets one search find them all.
  private buffer: Buffer = Buffer.from('\r\n');
  private state: 'preamble' | 'after-delimiter' | 'headers' | 'body' | 'done' = 'preamble';
  private part: Part | undefined;

  constructor(
    boundary: string,
    private readonly fileField: string,
    private readonly onFile: (data: Readable) => Promise<void>,
  ) {
    this.delimiter = Buffer.from(`\r\n--${boundary}`);
  }

  async push(chunk: Buffer): Promise<void> {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    while (await this.step()) {
      // Each step consumed something; the next may consume more.
    }
  }

  /** After the last chunk: the body must have reached its closing boundary. */
  end(): void {
    if (this.state === 'done') return;
    this.part?.file?.destroy(badRequest('the multipart body ended early'));
    throw badRequest('the multipart body ended before its closing boundary');
  }

  private step(): Promise<boolean> | boolean {
    if (this.state === 'preamble' || this.state === 'body') return this.toDelimiter();
    if (this.state === 'after-delimiter') return this.afterDelimiter();
    if (this.state === 'headers') return this.partHeaders();
    return false;
  }

  /** Up to the next delimiter: the preamble is skipped, a part's body is emitted. */
  private async toDelimiter(): Promise<boolean> {
    const at = this.buffer.indexOf(this.delimiter);
    if (at < 0) {
      // Keep what could be the start of a delimiter split across chunks.
      const keep = Math.min(this.buffer.length, this.delimiter.length - 1);
      if (this.state === 'body') await this.emit(this.buffer.subarray(0, this.buffer.length - keep));
      this.buffer = this.buffer.subarray(this.buffer.length - keep);
      return false;
    }
    if (this.state === 'body') {
      await this.emit(this.buffer.subarray(0, at));
      await this.finishPart();
    }
    this.buffer = this.buffer.subarray(at + this.delimiter.length);
    this.state = 'after-delimiter';
    return true;
  }

  /** `--` closes the body; otherwise the rest of the delimiter's line is skipped. */
  private afterDelimiter(): boolean {
    if (this.buffer.length < 2) return false;
    if (this.buffer[0] === 0x2d && this.buffer[1] === 0x2d) {
      this.state = 'done';
      return false;
    }
    const end = this.buffer.indexOf('\r\n');
    if (end < 0) return false;
    this.buffer = this.buffer.subarray(end + 2);
    this.state = 'headers';
    return true;
  }

  private partHeaders(): boolean {
    const end = this.buffer.subarray(0, 2).toString() === '\r\n' ? 0 : this.buffer.indexOf('\r\n\r\n');
    if (end < 0) {
      if (this.buffer.length > MAX_HEADER_BYTES) throw badRequest('multipart part headers are too long');
      return false;
    }
    this.startPart(this.buffer.subarray(0, end).toString('utf8'));
    this.buffer = this.buffer.subarray(end === 0 ? 2 : end + 4);
    this.state = 'body';
    return true;
  }

  private async emit(data: Buffer): Promise<void> {
    const part = this.part;
    if (!part || data.length === 0) return;
    if (part.file) {
      if (!part.file.write(data)) await Promise.race([once(part.file, 'drain'), part.written]);
      return;
    }
    part.size += data.length;
    if (part.size > MAX_TEXT_FIELD_BYTES) throw new HttpError(413, `form field '${part.name}' is longer than ${MAX_TEXT_FIELD_BYTES} bytes`);
    part.text.push(data);
  }

  private async finishPart(): Promise<void> {
    const part = this.part;
    if (!part) return;
    if (part.file) {
      part.file.end();
      await part.written;
    } else this.fields.set(part.name, Buffer.concat(part.text).toString('utf8'));
    this.part = undefined;
  }

  private startPart(headerText: string): void {
    const disposition = /^content-disposition:\s*form-data\s*;(.*)$/im.exec(headerText);
    const name = disposition && /\bname="([^"]*)"/i.exec(disposition[1]);
    if (!name) throw badRequest('a multipart part has no form-data name');
    const part: Part = { name: name[1], text: [], size: 0 };
    if (name[1] === this.fileField) {
      if (this.sawFile) throw badRequest(`only one '${this.fileField}' part is accepted`);
      this.sawFile = true;
      part.file = new PassThrough();
      part.written = this.onFile(part.file);
      // Observed by the awaits above; this keeps an early failure from being "unhandled".
      part.written.catch(() => undefined);
    }
    this.part = part;
  }
}

/**
 * Streams a multipart/form-data body: the part named `fileField` goes to `onFile` as it
 * arrives (an upload never sits whole in memory), other parts are returned as short text fields.
 */
export async function parseMultipart(
  body: AsyncIterable<Buffer>,
  boundary: string,
  fileField: string,
  onFile: (data: Readable) => Promise<void>,
): Promise<{ fields: Map<string, string>; sawFile: boolean }> {
  const reader = new MultipartReader(boundary, fileField, onFile);
  for await (const chunk of body) await reader.push(chunk);
  reader.end();
  return { fields: reader.fields, sawFile: reader.sawFile };
}
