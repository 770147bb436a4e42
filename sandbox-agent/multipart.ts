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
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  // The first delimiter has no CRLF before it; adding one lets one search find them all.
  let buffer: Buffer = Buffer.from('\r\n');
  let state: 'preamble' | 'after-delimiter' | 'headers' | 'body' | 'done' = 'preamble';
  const fields = new Map<string, string>();
  let sawFile = false;
  let part: { name: string; file?: PassThrough; written?: Promise<void>; text: Buffer[]; size: number } | undefined;

  const emit = async (data: Buffer) => {
    if (!part || data.length === 0) return;
    if (part.file) {
      if (!part.file.write(data)) await Promise.race([once(part.file, 'drain'), part.written]);
      return;
    }
    part.size += data.length;
    if (part.size > MAX_TEXT_FIELD_BYTES) throw new HttpError(413, `form field '${part.name}' is longer than ${MAX_TEXT_FIELD_BYTES} bytes`);
    part.text.push(data);
  };
  const finishPart = async () => {
    if (!part) return;
    if (part.file) {
      part.file.end();
      await part.written;
    } else fields.set(part.name, Buffer.concat(part.text).toString('utf8'));
    part = undefined;
  };
  const startPart = (headerText: string) => {
    const disposition = /^content-disposition:\s*form-data\s*;(.*)$/im.exec(headerText);
    const name = disposition && /\bname="([^"]*)"/i.exec(disposition[1]);
    if (!name) throw badRequest('a multipart part has no form-data name');
    part = { name: name[1], text: [], size: 0 };
    if (name[1] === fileField) {
      if (sawFile) throw badRequest(`only one '${fileField}' part is accepted`);
      sawFile = true;
      part.file = new PassThrough();
      part.written = onFile(part.file);
      // Observed by the awaits above; this keeps an early failure from being "unhandled".
      part.written.catch(() => undefined);
    }
  };

  for await (const chunk of body) {
    buffer = Buffer.concat([buffer, chunk]);
    for (let progress = true; progress; ) {
      progress = false;
      if (state === 'preamble' || state === 'body') {
        const at = buffer.indexOf(delimiter);
        if (at < 0) {
          // Keep what could be the start of a delimiter split across chunks.
          const keep = Math.min(buffer.length, delimiter.length - 1);
          if (state === 'body') await emit(buffer.subarray(0, buffer.length - keep));
          buffer = buffer.subarray(buffer.length - keep);
          continue;
        }
        if (state === 'body') {
          await emit(buffer.subarray(0, at));
          await finishPart();
        }
        buffer = buffer.subarray(at + delimiter.length);
        state = 'after-delimiter';
        progress = true;
      } else if (state === 'after-delimiter') {
        if (buffer.length < 2) continue;
        if (buffer[0] === 0x2d && buffer[1] === 0x2d) {
          state = 'done';
          continue;
        }
        const end = buffer.indexOf('\r\n');
        if (end < 0) continue;
        buffer = buffer.subarray(end + 2);
        state = 'headers';
        progress = true;
      } else if (state === 'headers') {
        const end = buffer.subarray(0, 2).toString() === '\r\n' ? 0 : buffer.indexOf('\r\n\r\n');
        if (end < 0) {
          if (buffer.length > MAX_HEADER_BYTES) throw badRequest('multipart part headers are too long');
          continue;
        }
        startPart(buffer.subarray(0, end).toString('utf8'));
        buffer = buffer.subarray(end === 0 ? 2 : end + 4);
        state = 'body';
        progress = true;
      }
    }
  }
  if (state !== 'done') {
    part?.file?.destroy(badRequest('the multipart body ended early'));
    throw badRequest('the multipart body ended before its closing boundary');
  }
  return { fields, sawFile };
}
