import fs from 'node:fs';
import net from 'node:net';
import type { ServiceProcess } from './service-process';
import { sleep } from './timing';

export interface ReadinessOptions {
  timeoutMs: number;
  intervalMs?: number;
  /** The local process behind the service: if it exits, waiting stops at once. */
  process?: ServiceProcess;
  /** Its log, quoted in the error so that the cause is visible without opening files. */
  logFile?: string;
}

export function logTail(logFile: string, lines = 15): string {
  try {
    const text = fs.readFileSync(logFile, 'utf8').trimEnd().split('\n');
    return text.slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

function failure(message: string, options: ReadinessOptions): Error {
  const tail = options.logFile ? `\nlast lines of ${options.logFile}:\n${logTail(options.logFile)}` : '';
  return new Error(message + tail);
}

/**
 * Calls `probe` until it resolves and returns its value. Bounded: after timeoutMs the error names
 * the service and the last probe failure.
 */
export async function waitUntilReady<T>(what: string, probe: () => Promise<T>, options: ReadinessOptions): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let lastError: string;
  for (;;) {
    if (options.process && !options.process.isRunning()) {
      throw failure(`${what} exited (${await options.process.exited}) before it was ready`, options);
    }
    try {
      return await probe();
    } catch (err) {
      lastError = (err as Error).message || String(err);
    }
    if (Date.now() >= deadline) {
      throw failure(`${what} was not ready within ${Math.round(options.timeoutMs / 1000)}s: ${lastError}`, options);
    }
    await sleep(options.intervalMs ?? 200);
  }
}

/** Fails with a clear message when something else already listens on the port we are about to use. */
export async function assertPortFree(port: number, purpose: string, host = '127.0.0.1'): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => {
      const why = err.code === 'EADDRINUSE' ? 'is already in use' : `cannot be bound (${err.code ?? err.message})`;
      reject(new Error(`port ${port} for ${purpose} ${why} on ${host}; stop what holds it or choose another port`));
    });
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve()));
  });
}
