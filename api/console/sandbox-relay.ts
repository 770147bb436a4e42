import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { renderSandboxUrl } from '../../domain/sandbox/url-template';

/**
 * The console runs on base_url, the sandboxes' API on the sandbox gateway: another origin, which
 * a page may not call with its credential (no CORS there), and a browser's WebSocket cannot carry
 * an Authorization header at all. These two relays let the console's terminal and file browser
 * reach a sandbox through base_url. They hold no authority of their own: the caller's credential
 * goes with each call to the sandbox gateway, which checks it as for any client.
 */

export const TERMINAL_PATH = '/console/sandbox-terminal';
const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
/** The credential is the relay's first message: it waits this long for it. */
const AUTH_WAIT_MS = 10_000;

/** The sandbox API's address for `workspace`/`sandbox` as the gateway serves it; a 4xx message naming the field otherwise. */
export function sandboxApiUrl(template: string, workspace: string | null, sandbox: string | null): { url: string } | { problem: string } {
  if (!workspace || !NAME.test(workspace)) return { problem: "'workspace' must be a workspace name" };
  if (!sandbox || !NAME.test(sandbox)) return { problem: "'sandbox' must be a sandbox name" };
  return { url: renderSandboxUrl(template, { workspace_id: workspace, sandbox_id: sandbox }) };
}

/** Terminal size from the query, as the sandbox API takes it (it checks the range itself). */
function sizeQuery(query: URLSearchParams): string {
  const size = new URLSearchParams();
  for (const name of ['cols', 'rows']) {
    const value = query.get(name);
    if (value !== null) size.set(name, value);
  }
  return size.size ? `?${size}` : '';
}

function refuse(socket: Duplex, status: number, message: string): void {
  const body = JSON.stringify({ error: status === 404 ? 'not_found' : 'bad_request', message });
  socket.end(`HTTP/1.1 ${status} ${status === 404 ? 'Not Found' : 'Bad Request'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

/** Relays one browser terminal to the sandbox's `/terminal/ws` once its first message gave the credential. */
function relayTerminal(client: WebSocket, target: string): void {
  const waiting = setTimeout(() => client.close(1008, 'no credential'), AUTH_WAIT_MS);
  client.once('message', (raw) => {
    clearTimeout(waiting);
    let token: unknown;
    try {
      token = (JSON.parse(raw.toString()) as { type?: string; token?: unknown }).token;
    } catch {
      token = undefined;
    }
    if (typeof token !== 'string' || !token) {
      client.send(JSON.stringify({ type: 'error', data: 'the first message must be {"type":"auth","token":"..."}' }));
      return client.close(1008, 'no credential');
    }
    const upstream = new WebSocket(target.replace(/^http/, 'ws'), { headers: { authorization: `Bearer ${token}` } });
    upstream.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => {
        const message = (() => {
          try {
            return (JSON.parse(body) as { message?: string }).message ?? body;
          } catch {
            return body;
          }
        })();
        client.send(JSON.stringify({ type: 'error', data: `the sandbox answered ${res.statusCode}: ${message}` }));
        client.close(1008, 'refused');
      });
    });
    upstream.on('error', (err) => {
      if (client.readyState === client.OPEN) client.send(JSON.stringify({ type: 'error', data: `the sandbox could not be reached: ${err.message}` }));
      client.close(1011, 'unreachable');
    });
    // Keys typed (or a resize) while the sandbox's side still opens wait for it.
    const early: [RawData, boolean][] = [];
    client.on('message', (data: RawData, isBinary) => (upstream.readyState === upstream.OPEN ? upstream.send(data, { binary: isBinary }) : early.push([data, isBinary])));
    upstream.on('open', () => {
      for (const [data, isBinary] of early.splice(0)) upstream.send(data, { binary: isBinary });
      upstream.on('message', (data: RawData, isBinary) => client.send(data, { binary: isBinary }));
    });
    upstream.on('close', (code) => client.close(code === 1000 ? 1000 : 1011));
    client.on('close', () => upstream.terminate());
  });
}

/** WebSocket upgrades of base_url: the console's terminal relay; any other path is 404. */
export function consoleTerminalRelay(app: FastifyInstance): void {
  const server = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const url = new URL(req.url ?? '/', 'http://console');
    if (url.pathname !== TERMINAL_PATH) return refuse(socket, 404, `no WebSocket at ${url.pathname}`);
    const address = sandboxApiUrl(app.config.sandboxUrlTemplate, url.searchParams.get('workspace'), url.searchParams.get('sandbox'));
    if ('problem' in address) return refuse(socket, 400, address.problem);
    const target = `${address.url}/terminal/ws${sizeQuery(url.searchParams)}`;
    server.handleUpgrade(req, socket, head, (client) => relayTerminal(client, target));
  });
  // Before the listener closes: a terminal lasts as long as its person wants, and would hold the close.
  app.addHook('preClose', (done) => {
    for (const client of server.clients) client.terminate();
    server.close(() => done());
  });
}

/**
 * GET /console/sandbox-files/{workspace}/{sandbox}/{path}: the sandbox API's
 * `GET /filesystem/{path}` (a folder's listing, or a file), with the caller's credential.
 */
export function consoleFileRelay(app: FastifyInstance): void {
  app.get('/console/sandbox-files/:workspace/:sandbox/*', { config: { public: true, unversioned: true }, schema: { hide: true } }, async (request, reply) => {
    const params = request.params as { workspace: string; sandbox: string; '*': string };
    const address = sandboxApiUrl(app.config.sandboxUrlTemplate, params.workspace, params.sandbox);
    if ('problem' in address) return reply.code(400).send({ error: 'bad_request', message: address.problem });
    const credential = request.headers.authorization;
    if (!credential) return reply.code(401).send({ error: 'unauthorized', message: 'an Authorization header is required' });
    const path = params['*'].split('/').map(encodeURIComponent).join('/');
    let answer: Response;
    try {
      answer = await fetch(`${address.url}/filesystem/${path}`, { headers: { authorization: credential } });
    } catch (err) {
      return reply.code(502).send({ error: 'sandbox_unreachable', message: `the sandbox gateway did not answer: ${(err as Error).message}` });
    }
    // What a sandbox serves is its own: never a page of base_url's origin, whatever type it claims.
    const type = answer.headers.get('content-type') ?? '';
    return reply
      .code(answer.status)
      .header('content-type', type.startsWith('application/json') ? type : 'application/octet-stream')
      .header('x-content-type-options', 'nosniff')
      .header('content-security-policy', "default-src 'none'; sandbox")
      .header('cache-control', 'no-store')
      .send(Buffer.from(await answer.arrayBuffer()));
  });
}
