import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ExecutionEvent } from './contract/process';
import { LineFramer } from './output-log';
import type { ManagedProcess } from './process-manager';

/** A stream with nothing else to say sends a keepalive event this often, so no proxy on the way times it out. */
export const EXECUTION_KEEPALIVE_MS = 5_000;

/**
 * Whether the caller of POST /process asked for its execution streamed. The reference's SDK asks
 * with `Accept: text/event-stream` and reads NDJSON back; other clients ask for the NDJSON itself.
 */
export function wantsExecutionStream(req: IncomingMessage): boolean {
  return /\b(text\/event-stream|application\/x-ndjson)\b/i.test(req.headers.accept ?? '');
}

/**
 * Answers a started process as NDJSON, one event a line (contract/process.ts, ExecutionEvent):
 * its output line by line as it comes, both streams, each line once and with its newline (the
 * last one of a stream without, if it had none), a keepalive now and then, and once it ended its
 * final record. The output log replays what came before the stream began and follows on in one
 * step, so no line is lost or sent twice; a caller that goes away leaves the process running.
 */
export function streamExecution(res: ServerResponse, managed: ManagedProcess): void {
  res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-cache', 'x-accel-buffering': 'no', 'x-content-type-options': 'nosniff' });
  res.flushHeaders();
  const send = (event: ExecutionEvent) => res.write(`${JSON.stringify(event)}\n`);
  const lines = new LineFramer((stream, data) => send({ type: stream, data }));
  const keepalive = setInterval(() => send({ type: 'keepalive' }), EXECUTION_KEEPALIVE_MS);
  // The log ends (and its last lines leave) before `finished` settles: the record comes after them.
  const unfollow = managed.output.follow({ chunk: (chunk) => lines.chunk(chunk), end: () => lines.flush() });
  const stop = () => {
    clearInterval(keepalive);
    unfollow();
  };
  res.on('close', stop);
  void managed.finished.then(() => {
    stop();
    if (res.destroyed) return;
    send({ type: 'result', data: JSON.stringify(managed.view()) });
    res.end();
  });
}
