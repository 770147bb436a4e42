import { ApplicationFailure, log } from '@temporalio/activity';
import type { PortEvent } from '../sandbox-agent/contract/port-events';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { sandboxLayout } from '../runtime/layout';

export interface PortCallbackFailure {
  sandboxId: string;
  event: PortEvent;
  error: string;
  failedAt: string;
}

/**
 * One delivery attempt of a JSON callback, for every kind of callback the platform sends: 2xx
 * delivers; 408, 429, 5xx and an unreachable target are retried (ApplicationFailure retryable);
 * any other 4xx is final (CallbackRejected). The workflow's retry policy bounds the attempts.
 */
export async function postCallback(url: string, body: string, headers: Record<string, string>, timeoutMs = 10_000): Promise<{ status: number }> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    // fetch says only "fetch failed"; the reason (ECONNREFUSED, a timeout...) is its cause.
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw ApplicationFailure.retryable(`callback unreachable: ${cause?.code ?? cause?.message ?? (err as Error).message}`, 'CallbackUnreachable');
  }
  await response.body?.cancel().catch(() => undefined);
  if (response.ok) return { status: response.status };
  const message = `callback answered ${response.status}`;
  if (response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429) {
    throw ApplicationFailure.nonRetryable(message, 'CallbackRejected');
  }
  throw ApplicationFailure.retryable(message, 'CallbackFailed');
}

export interface CallbackActivityDeps {
  /** Keeps a record of an event whose delivery was given up (default: the worker's log). */
  recordFailure?: (failure: PortCallbackFailure) => Promise<void>;
  /** Time one attempt may take. */
  requestTimeoutMs?: number;
}

/**
 * The side effects of port callback delivery. They run on the platform's host (the node's
 * worker), so a callback on 127.0.0.1 reaches the host, as users expect.
 */
export function createCallbackActivities(deps: CallbackActivityDeps = {}) {
  return {
    /** One attempt; see postCallback. */
    async deliverPortCallback(event: PortEvent): Promise<{ status: number }> {
      const body = JSON.stringify({ pid: event.pid, port: event.port, sandbox: event.sandbox, detectedAt: event.detectedAt });
      return postCallback(event.callback, body, { 'idempotency-key': event.key, 'user-agent': 'hangar-port-callback/1' }, deps.requestTimeoutMs);
    },

    async recordPortCallbackFailure(failure: PortCallbackFailure): Promise<void> {
      if (deps.recordFailure) return deps.recordFailure(failure);
      log.warn('port callback given up', { sandboxId: failure.sandboxId, key: failure.event.key, port: failure.event.port, error: failure.error });
    },
  };
}

export type CallbackActivities = ReturnType<typeof createCallbackActivities>;

/**
 * Keeps given-up deliveries next to the sandbox (`port-callback-failures.jsonl` in its folder),
 * or in the data folder once the sandbox is gone: for the activities' `recordFailure`.
 */
export function fileFailureRecorder(dataDir: string): (failure: PortCallbackFailure) => Promise<void> {
  return async (failure) => {
    let dir = dataDir;
    try {
      const root = sandboxLayout(dataDir, failure.sandboxId).root;
      if (fs.existsSync(root)) dir = root;
    } catch {
      // Not a valid sandbox id: keep it in the data folder.
    }
    await fsp.appendFile(path.join(dir, 'port-callback-failures.jsonl'), `${JSON.stringify(failure)}\n`, { mode: 0o600 });
  };
}
