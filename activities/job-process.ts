import http from 'node:http';

/** What the in-sandbox agent reports about one process (the fields jobs use). */
export interface AgentProcessView {
  name: string;
  status: 'running' | 'completed' | 'failed' | 'killed' | 'stopped';
  exitCode: number | null;
  startedAt: string;
  completedAt: string | null;
  stderr: string;
  stdout: string;
}

export interface AgentReply<T> {
  status: number;
  body: T;
}

/**
 * One JSON call to a sandbox's agent over its Unix socket. No client-side timeout: a task's POST
 * /process waits as long as the task runs (the agent enforces the task's own timeout); `signal`
 * aborts it.
 */
export function callAgent<T>(socketPath: string, method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<AgentReply<T>> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const request = http.request(
      {
        socketPath,
        method,
        path,
        signal,
        headers: payload === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            // Not JSON: keep the text for the error message.
          }
          resolve({ status: response.statusCode ?? 0, body: parsed as T });
        });
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}
