import fs from 'node:fs';
import http from 'node:http';

export interface AgentResponse {
  status: number;
  body: unknown;
}

/** One JSON request to a sandbox's API over its Unix socket, from the host. */
export function agentRequest(socketPath: string, method: string, path: string, timeoutMs = 5_000): Promise<AgentResponse> {
  return new Promise((resolve, reject) => {
    const request = http.request({ socketPath, method, path, timeout: timeoutMs, headers: { accept: 'application/json' } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        try {
          resolve({ status: response.statusCode ?? 0, body: text ? JSON.parse(text) : undefined });
        } catch {
          resolve({ status: response.statusCode ?? 0, body: text });
        }
      });
      response.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error(`the sandbox API did not answer ${method} ${path} within ${timeoutMs} ms`)));
    request.on('error', reject);
    request.end();
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Resolves once the agent answers /health. Polls quickly: the agent's start (tens of ms) is
 * the whole of a sandbox's creation time, so every millisecond of polling delay shows.
 * `failure()` is asked between attempts and ends the wait early with its reason.
 */
export async function waitForAgent(socketPath: string, deadline: number, failure: () => string | undefined): Promise<void> {
  let lastError = 'the API socket never appeared';
  for (;;) {
    const reason = failure();
    if (reason) throw new Error(reason);
    if (fs.existsSync(socketPath)) {
      try {
        const { status } = await agentRequest(socketPath, 'GET', '/health', Math.max(50, deadline - Date.now()));
        if (status === 200) return;
        lastError = `/health answered ${status}`;
      } catch (err) {
        lastError = (err as Error).message;
      }
    }
    if (Date.now() > deadline) throw new Error(`the sandbox API did not become ready: ${lastError}`);
    await sleep(2);
  }
}
