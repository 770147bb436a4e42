import type busboy from 'busboy';
import { Readable } from 'node:stream';
import { HttpError, badRequest } from './http';

const MAX_TEXT_FIELD_BYTES = 64 * 1024;
/** Form fields and parts beyond the file: a handful is all any route reads. */
const MAX_PARTS = 100;

/** The boundary of a multipart/form-data content type, if it is one. */
export function multipartBoundary(contentType: string | undefined): string | undefined {
  if (!contentType || !/^multipart\/form-data\b/i.test(contentType)) return undefined;
  const match = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  if (!match) throw badRequest('multipart/form-data without a boundary');
  return match[1] ?? match[2];
}

export interface MultipartOptions {
  /** The form field that carries the file. */
  fileField: string;
  /** Bytes the file may have at most (413 beyond). */
  maxFileBytes?: number;
  /** Consumes the file's bytes as they arrive; the parse waits for it. */
  onFile: (data: Readable) => Promise<void>;
}

/**
 * busboy, loaded on the first multipart body rather than at the agent's start: an idle sandbox's
 * memory is the agent's at start, and many sandboxes never receive one.
 */
let busboyModule: typeof busboy | undefined;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const loadBusboy = (): typeof busboy => (busboyModule ??= require('busboy') as typeof busboy);

/**
 * Streams a multipart/form-data body through busboy: the part named `fileField` goes to `onFile`
 * as it arrives (an upload never sits whole in memory), other parts come back as short text
 * fields. A body without that part, cut short, or malformed is a 400; a file or field over its
 * limit a 413.
 */
export function parseMultipart(body: Readable, boundary: string, options: MultipartOptions): Promise<{ fields: Map<string, string> }> {
  const fields = new Map<string, string>();
  let written: Promise<void> | undefined;
  let file: Readable | undefined;
  return new Promise<{ fields: Map<string, string> }>((resolve, reject) => {
    let failed = false;
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      // The file's consumer learns it too (a client gone mid-part must not leave it waiting).
      if (file && !file.readableEnded) file.destroy(err as Error);
      body.unpipe(parser);
      afterDrained(body, () => reject(err));
    };
    const takeFile = (data: Readable) => {
      if (written) return fail(badRequest(`only one '${options.fileField}' part is accepted`));
      file = data;
      // Its consumer sees a failure through its own listeners; a consumer that gave up without
      // reading (a refused part) has none, and the failure must not become an uncaught error.
      data.on('error', () => undefined);
      written = options.onFile(data);
      written.catch(fail);
    };
    let parser: busboy.Busboy;
    try {
      parser = loadBusboy()({
        headers: { 'content-type': `multipart/form-data; boundary="${boundary}"` },
        // busboy says 'limit' on reaching its bound, not on passing it: one byte more tells a
        // file of exactly the maximum from a bigger one.
        limits: { fileSize: (options.maxFileBytes ?? Infinity) + 1, fieldSize: MAX_TEXT_FIELD_BYTES, parts: MAX_PARTS },
      });
    } catch (err) {
      return reject(badRequest(`the multipart body cannot be read: ${(err as Error).message}`));
    }
    parser.on('file', (name, stream) => {
      if (name !== options.fileField) return stream.resume();
      stream.on('limit', () => {
        const tooBig = new HttpError(413, `'${name}' is larger than ${options.maxFileBytes} bytes`);
        stream.destroy(tooBig);
        fail(tooBig);
      });
      takeFile(stream);
    });
    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) return fail(new HttpError(413, `form field '${name}' is longer than ${MAX_TEXT_FIELD_BYTES} bytes`));
      // A file sent as a plain field (no filename) is still the file.
      if (name === options.fileField) return takeFile(Readable.from([Buffer.from(value)]));
      fields.set(name, value);
    });
    parser.on('partsLimit', () => fail(new HttpError(413, `a multipart body may have at most ${MAX_PARTS} parts`)));
    parser.on('error', (err: Error) => fail(readError(err)));
    parser.on('close', () => {
      if (!written) return fail(badRequest(`the multipart body has no '${options.fileField}' part`));
      written.then(() => resolve({ fields }), fail);
    });
    body.on('error', fail);
    body.pipe(parser);
  });
}

/** Bytes of a refused body read and dropped before the refusal is answered anyway. */
const MAX_DRAINED_BYTES = 64 * 1024 * 1024;

/**
 * Calls `then` once the rest of the body is read and dropped. A refusal answered while the
 * client still sends leaves the exchange unfinished: clients such as fetch stop sending, and the
 * connection then stays open, never reused nor closed, on the agent and on the gateway in front
 * of it. Past MAX_DRAINED_BYTES the answer goes out anyway.
 */
function afterDrained(body: Readable, then: () => void): void {
  let dropped = 0;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    then();
  };
  if (body.readableEnded || body.destroyed) return finish();
  body.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > MAX_DRAINED_BYTES) finish();
  });
  body.once('end', finish);
  body.once('close', finish);
  body.once('error', finish);
  body.resume();
}

/** busboy's parse errors, told as what they mean for the sender. */
function readError(err: Error): HttpError {
  if (/unexpected end/i.test(err.message)) return badRequest('the multipart body ended before its closing boundary');
  return badRequest(`the multipart body cannot be read: ${err.message.toLowerCase()}`);
}
