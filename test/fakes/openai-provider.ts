import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the fake provider received, as it arrived. */
export interface ProviderRequestRecord {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** The SSE bytes a streamed completion sends: deliberately irregular (CRLF, a comment, no trailing space, non-ASCII). */
export const SSE_FIRST = 'data: {"choices":[{"delta":{"role":"assistant","content":"Hé"}}]}\n\n';
export const SSE_REST = ': keep-alive comment\r\n\r\ndata:{"choices":[{"delta":{"content":"llo ✓"}}]}\n\ndata: [DONE]\n\n';

/**
 * An OpenAI-compatible chat completion API as a real HTTP server for tests. POST
 * {base}/v1/chat/completions answers according to the request's `model`:
 * - 'fail-429' / 'fail-500': that status with an OpenAI-shaped error that echoes the
 *   Authorization header it got (a careless provider), so tests see it never reaches a client;
 * - anything else: a JSON completion naming the model and echoing the last message, or, with
 *   `stream: true`, SSE that sends SSE_FIRST, then waits for `releaseStream()` before SSE_REST,
 *   so a test can prove the first event reached the client before the stream ended.
 * Only requests with `Authorization: Bearer <one of the accepted keys>` get further than a 401.
 */
export class FakeOpenAIProvider {
  readonly requests: ProviderRequestRecord[] = [];
  readonly acceptedKeys = new Set<string>();
  private server?: Server;
  private releases: (() => void)[] = [];

  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/v1`;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        let body: Record<string, unknown> = {};
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        } catch {
          // recorded as {}: the test looks at what arrived
        }
        this.requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
        this.answer(req.url ?? '', req.headers, body, res);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
  }

  /** Lets the streams waiting after their first event finish. */
  releaseStream(): void {
    for (const release of this.releases.splice(0)) release();
  }

  async stop(): Promise<void> {
    this.releaseStream();
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  private answer(path: string, headers: IncomingHttpHeaders, body: Record<string, unknown>, res: ServerResponse): void {
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'set-cookie': 'provider-session=abc; Path=/' });
      res.end(JSON.stringify(value));
    };
    if (path !== '/v1/chat/completions') return json(404, { error: { message: `no route ${path}`, type: 'invalid_request_error' } });
    const key = /^Bearer (.+)$/.exec(headers.authorization ?? '')?.[1];
    if (!key || !this.acceptedKeys.has(key)) return json(401, { error: { message: `Incorrect API key provided: ${key}`, type: 'invalid_request_error' } });
    const failure = /^fail-(\d{3})$/.exec(String(body.model))?.[1];
    if (failure) return json(Number(failure), { error: { message: `failed on purpose for ${headers.authorization}`, type: 'server_error' } });
    const messages = Array.isArray(body.messages) ? (body.messages as { content?: string }[]) : [];
    if (body.stream === true) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(SSE_FIRST);
      this.releases.push(() => res.end(SSE_REST));
      return;
    }
    json(200, {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      model: body.model,
      choices: [{ index: 0, message: { role: 'assistant', content: `you said: ${messages.at(-1)?.content ?? ''}` }, finish_reason: 'stop' }],
    });
  }
}
