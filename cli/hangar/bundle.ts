import fs from 'node:fs';
import * as tar from 'tar';

/** The folder as a tar.gz (paths relative to it): a workload's bundle, or an image's build context. */
export async function packFolder(dir: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const stream = tar.c({ gzip: true, cwd: dir, portable: true }, fs.readdirSync(dir).sort());
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** Chunks of an upload: small enough that a bar moves on a slow link, large enough to cost nothing. */
const CHUNK_BYTES = 64 * 1024;

/** `bytes` as a request body that says how much of it was handed to the connection so far. */
export function meteredBody(bytes: Buffer, onSent: (sent: number) => void): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= bytes.length) {
        controller.close();
        return;
      }
      const end = Math.min(bytes.length, offset + CHUNK_BYTES);
      controller.enqueue(new Uint8Array(bytes.buffer, bytes.byteOffset + offset, end - offset));
      offset = end;
      onSent(offset);
    },
  });
}
