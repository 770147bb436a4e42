import type { Writable } from 'node:stream';
import { HttpError } from './http';

const gone = (why: string) => new HttpError(409, `stdin is closed: ${why}`);

/**
 * The writable stdin of a process started with `stdin: true`, across its restarts. Bodies are
 * handed to the pipe one at a time, in the order their requests finished arriving: each is
 * written whole before the next begins, so concurrent writers never interleave inside a body.
 */
export class StdinPipe {
  private stream?: Writable;
  private closed = false;
  private ended = false;
  /** The last write handed over; the next waits for it. */
  private queue: Promise<void> = Promise.resolve();

  /** The pipe of the process's current child (a restart brings a new one; a closed stdin stays closed). */
  attach(stream: Writable): void {
    // A child that exits without reading makes the pipe fail with EPIPE: the write in flight reports it.
    stream.on('error', () => undefined);
    this.stream = stream;
    if (this.closed) stream.end();
  }

  /** Resolves once the kernel took every byte; a 409 when the pipe is closed or breaks meanwhile. */
  write(data: Buffer): Promise<void> {
    const turn = this.queue.then(() => this.writeNow(data));
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  private writeNow(data: Buffer): Promise<void> {
    const stream = this.stream;
    if (this.closed) return Promise.reject(gone('it was closed'));
    if (this.ended || !stream || !stream.writable) return Promise.reject(gone('the process has ended'));
    return new Promise((resolve, reject) => {
      stream.write(data, (err) => (err ? reject(gone(err.message)) : resolve()));
    });
  }

  /** EOF for the process: bytes already handed to the pipe still reach it first. Idempotent. */
  close(): void {
    this.closed = true;
    this.stream?.end();
  }

  /** The process ended: a write still waiting on the pipe (a descendant holds it, unread) fails at once. */
  release(): void {
    this.ended = true;
    this.stream?.destroy();
  }
}
