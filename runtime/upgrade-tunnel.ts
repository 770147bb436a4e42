import { STATUS_CODES, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';

export interface TunnelOptions {
  socketPath: string;
  /** Path (with query) of the upgrade request upstream. */
  path: string;
  /** The request's headers as they go upstream, Connection and Upgrade included. */
  headers: IncomingHttpHeaders;
  /** The upstream could not be reached; nothing was sent to the client yet. */
  onUnreachable(err: Error): void;
}

/**
 * Carries an HTTP upgrade (a WebSocket) to an upstream Unix socket: the request goes up as it
 * came, with the given headers, and from then on bytes flow both ways unparsed, the upstream's
 * own 101 (or refusal) included. Either side closing closes both.
 */
export function tunnelUpgrade(req: IncomingMessage, client: Duplex, head: Buffer, options: TunnelOptions): void {
  const upstream = net.connect(options.socketPath);
  let connected = false;
  const end = () => {
    upstream.destroy();
    client.destroy();
  };
  upstream.once('connect', () => {
    connected = true;
    const lines = [`${req.method ?? 'GET'} ${options.path} HTTP/1.1`];
    for (const [name, value] of Object.entries(options.headers)) {
      for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) lines.push(`${name}: ${one}`);
    }
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.on('error', (err) => (connected ? end() : options.onUnreachable(err)));
  upstream.on('close', end);
  client.on('error', end);
  client.on('close', end);
}

/** Refuses an upgrade on the client's socket with a JSON error, as the HTTP routes answer. */
export function refuseUpgrade(client: Duplex, status: number, body: Record<string, unknown>): void {
  const text = JSON.stringify(body);
  client.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`);
}
