import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { refuseUpgrade, relayUpgrade } from './contract/upgrade';
import { badRequest, sendJson } from './http';

/**
 * `{sandbox_url}/port/{port}/...`: a request (or a WebSocket upgrade) for a port of the sandbox,
 * forwarded from inside the sandbox's own network namespace to 127.0.0.1:{port}. It lives in the
 * sandbox's API rather than in the host's gateway so that the host never connects to anything the
 * sandbox could swap (a forwarder socket in a folder the sandbox writes) and so that "nothing
 * listens" is told apart from any other failure. The path and query after `/port/{port}` go as sent.
 */

const PORT_TEXT = /^[0-9]{1,5}$/;

/** The port a route names: 400 naming the field for anything but 1-65535. */
export function parsePort(text: string): number {
  const port = PORT_TEXT.test(text) ? Number(text) : NaN;
  if (!(port >= 1 && port <= 65535)) throw badRequest(`port must be an integer from 1 to 65535, got '${text.slice(0, 32)}'`);
  return port;
}

/** What follows `/port/{port}` in a request target (path and query as sent); `/` when nothing does. */
export function pathAfterPort(target: string): string {
  const rest = target.replace(/^\/port\/[^/?]*/, '');
  return rest.startsWith('/') ? rest : `/${rest}`;
}

/** One hop's headers, never passed on (RFC 9110 7.6.1); `host` is set for the port instead. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host']);

function passedOn(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const name in headers) if (!HOP_BY_HOP.has(name)) out[name] = headers[name];
  return out;
}

/** The error of a port nothing answers on, in the API's shape. */
function unreachable(port: number, err: NodeJS.ErrnoException): { error: string } {
  const why = err.code === 'ECONNREFUSED' ? `nothing is listening on port ${port} in the sandbox` : `port ${port} of the sandbox did not answer`;
  return { error: `${why} (${err.code ?? err.message})` };
}

export class PortProxy {
  /** Keep-alive connections to the sandbox's ports, as the gateway keeps them to the API. */
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 64, timeout: 4_000 });

  /**
   * Streams the request to the port and its answer back, neither body held whole. `host` makes it
   * a local request to the program there, which development servers accept by default.
   */
  forward(req: IncomingMessage, res: ServerResponse, port: number): void {
    const upstream = http.request({
      host: '127.0.0.1',
      port,
      method: req.method,
      path: pathAfterPort(req.url ?? '/'),
      headers: { ...passedOn(req.headers), host: `localhost:${port}` },
      agent: this.agent,
    });
    upstream.on('response', (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, passedOn(answer.headers));
      // An answer of unknown length may be a stream (server-sent events): its headers go at once.
      if (answer.headers['content-length'] === undefined) res.flushHeaders();
      answer.on('error', () => res.destroy());
      answer.pipe(res);
    });
    upstream.on('error', (err) => {
      if (res.headersSent) res.destroy();
      else sendJson(res, 502, unreachable(port, err));
    });
    // A caller that goes away cancels the request to the port.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  }

  /** Relays an upgrade to the port: its head written again for the port, then bytes both ways. */
  upgrade(req: IncomingMessage, client: Duplex, head: Buffer, port: number): void {
    const headers = { ...passedOn(req.headers), host: `localhost:${port}`, connection: 'Upgrade', upgrade: req.headers.upgrade };
    const request = { method: req.method ?? 'GET', path: pathAfterPort(req.url ?? '/'), headers };
    relayUpgrade(client, { host: '127.0.0.1', port }, request, head, (err) => refuseUpgrade(client, 502, unreachable(port, err)));
  }
}
