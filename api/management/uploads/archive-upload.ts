import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { PassThrough, Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ApiError, badRequest } from '../../../domain/errors';

/**
 * Streams an uploaded archive (a request's body) to `partial`, hashing and counting it: never
 * held in memory; over `limitBytes`, a 413 naming `what`; empty or unreadable, a 400. Answers its
 * sha256 and size. On a refusal the rest of the body is read and dropped rather than the request
 * destroyed: destroying it closes the connection (Node 22 and later), and the 413 with it.
 */
export async function receiveArchive(body: Readable, partial: string, limitBytes: number, what: string, mode = 0o600): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      if (bytes > limitBytes) return done(new ApiError(413, 'payload_too_large', `body: ${what} is larger than the limit of ${limitBytes} bytes`));
      hash.update(chunk);
      done(null, chunk);
    },
  });
  // pipe(), not pipeline(), from the request: a failure downstream must not destroy it.
  const source = new PassThrough();
  const failed = (err: Error) => source.destroy(err);
  body.once('error', failed);
  body.pipe(source);
  try {
    await pipeline(source, meter, fs.createWriteStream(partial, { mode }));
  } catch (err) {
    body.unpipe(source);
    body.resume();
    if (err instanceof ApiError) throw err;
    throw badRequest(`body: ${what} could not be read: ${(err as Error).message}`);
  } finally {
    body.off('error', failed);
  }
  if (bytes === 0) throw badRequest(`body: ${what} is empty; send a tar.gz archive`);
  return { sha256: hash.digest('hex'), bytes };
}
