import fs from 'node:fs';
import http from 'node:http';
import type { PortForward, ProcessPorts } from '../sandbox-agent/contract/network';
import type { ProcessRecord, ProcessRequest } from '../sandbox-agent/contract/process';
import { routeOf, routePath, type AgentOperation } from '../sandbox-agent/contract/routes';
import type { AgentActivity, AgentErrorBody, AgentHealth, AgentReload } from '../sandbox-agent/contract/service';

/** The agent answered with an error (4xx or 5xx); `reason` is its `{"error"}` message. */
export class AgentError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    what: string,
  ) {
    super(`the sandbox API answered ${status} to ${what}: ${reason}`);
  }
}

/** The agent's socket could not be reached (missing, refused, or the agent went away). */
export class AgentUnreachableError extends Error {}

export interface CallOptions {
  /** Aborts the call (a cancelled activity, a deadline of the caller's). */
  signal?: AbortSignal;
  /** Gives up after this long; none by default: a POST /process may wait as long as its command runs. */
  timeoutMs?: number;
}

/** Calls the host makes that must not hang: the agent answers them at once. */
const PROMPT_MS = 5_000;

interface Reply {
  status: number;
  text: string;
}

/**
 * The one client of the sandbox agent, for everything on the host that calls it (the runtime,
 * job and deployment activities). Speaks JSON over the sandbox's Unix socket; every path and
 * method comes from the contract's route table, every answer is one of its types. An error
 * answer throws AgentError, except where a missing thing is an answer (findProcess).
 */
export class SandboxAgentClient {
  constructor(readonly socketPath: string) {}

  health(options: CallOptions = { timeoutMs: PROMPT_MS }): Promise<AgentHealth> {
    return this.call('health', {}, undefined, options);
  }

  activity(options: CallOptions = { timeoutMs: PROMPT_MS }): Promise<AgentActivity> {
    return this.call('activity', {}, undefined, options);
  }

  reload(options: CallOptions = { timeoutMs: PROMPT_MS }): Promise<AgentReload> {
    return this.call('reload', {}, undefined, options);
  }

  startProcess(request: ProcessRequest, options: CallOptions = {}): Promise<ProcessRecord> {
    return this.call('startProcess', {}, request, options);
  }

  /** A process by pid or name; undefined when the agent knows none by it. */
  async findProcess(process: string | number, options: CallOptions = {}): Promise<ProcessRecord | undefined> {
    try {
      return await this.call<ProcessRecord>('getProcess', { process }, undefined, options);
    } catch (err) {
      if (err instanceof AgentError && err.status === 404) return undefined;
      throw err;
    }
  }

  killProcess(process: string | number, options: CallOptions = {}): Promise<ProcessRecord> {
    return this.call('killProcess', { process }, undefined, options);
  }

  processPorts(pid: number, options: CallOptions = {}): Promise<ProcessPorts> {
    return this.call('processPorts', { pid }, undefined, options);
  }

  forwardPort(port: number, options: CallOptions = {}): Promise<PortForward> {
    return this.call('forwardPort', {}, { port }, options);
  }

  private async call<T>(operation: AgentOperation, params: Record<string, string | number>, body: unknown, options: CallOptions): Promise<T> {
    const { method } = routeOf(operation);
    const path = routePath(operation, params);
    const what = `${method} ${path}`;
    const reply = await this.send(method, path, body, options);
    const parsed = parseJson(reply.text);
    if (reply.status < 200 || reply.status > 299) throw new AgentError(reply.status, errorMessage(parsed, reply.text), what);
    if (parsed === undefined) throw new Error(`the sandbox API answered ${what} with no JSON: ${reply.text.slice(0, 200)}`);
    return parsed as T;
  }

  private send(method: string, path: string, body: unknown, { signal, timeoutMs }: CallOptions): Promise<Reply> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = payload === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' };
    return new Promise((resolve, reject) => {
      const request = http.request({ socketPath: this.socketPath, method, path, signal, headers }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', reject);
      });
      const timer = timeoutMs === undefined ? undefined : setTimeout(() => request.destroy(new Error(`the sandbox API did not answer ${method} ${path} within ${timeoutMs} ms`)), timeoutMs);
      request.on('close', () => clearTimeout(timer));
      request.on('error', (err: NodeJS.ErrnoException) => reject(unreachable(err, this.socketPath)));
      request.end(payload);
    });
  }
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The contract's error shape `{"error": "..."}`, or the raw text of an answer that lacks it. */
function errorMessage(body: unknown, text: string): string {
  const error = (body as Partial<AgentErrorBody> | undefined)?.error;
  return typeof error === 'string' ? error : text.slice(0, 500) || '(no body)';
}

/** A connection that never reached the agent says so; aborts and timeouts pass as they are. */
function unreachable(err: NodeJS.ErrnoException, socketPath: string): Error {
  if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED' || err.code === 'ENOTSOCK') {
    return new AgentUnreachableError(`the sandbox API is not reachable at ${socketPath}: ${err.code}`, { cause: err });
  }
  return err;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Resolves once the agent answers /health. Polls quickly: the agent's start (tens of ms) is
 * the whole of a sandbox's creation time, so every millisecond of polling delay shows.
 * `failure()` is asked between attempts and ends the wait early with its reason.
 */
export async function waitForAgent(socketPath: string, deadline: number, failure: () => string | undefined): Promise<void> {
  const client = new SandboxAgentClient(socketPath);
  let lastError = 'the API socket never appeared';
  for (;;) {
    const reason = failure();
    if (reason) throw new Error(reason);
    if (fs.existsSync(socketPath)) {
      try {
        await client.health({ timeoutMs: Math.max(50, deadline - Date.now()) });
        return;
      } catch (err) {
        lastError = err instanceof AgentError ? `/health answered ${err.status}` : (err as Error).message;
      }
    }
    if (Date.now() > deadline) throw new Error(`the sandbox API did not become ready: ${lastError}`);
    await sleep(2);
  }
}
