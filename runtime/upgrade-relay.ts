import net from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * An HTTP upgrade (WebSocket and the like) relayed one hop further, as the sandbox gateway does to
 * a sandbox's API or to a port of the sandbox: the request's head is written again for the next
 * hop, then bytes are piped both ways untouched. The answer (101 or a refusal) comes back in those
 * bytes, so the relay parses neither it nor the frames after it.
 */
export interface UpgradeRequest {
  method: string;
  /** Path and query, as the next hop is to see them. */
  path: string;
  /** The headers to send, the upgrade's own (`Connection`, `Upgrade`, `Sec-WebSocket-*`) among them. */
  headers: Record<string, string | string[] | undefined>;
}

/** A request head in HTTP/1.1 wire form; header values with a line break are dropped, never sent. */
function requestHead({ method, path, headers }: UpgradeRequest): string {
  const lines = [`${method} ${path} HTTP/1.1`];
  for (const [name, value] of Object.entries(headers)) {
    for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) {
      if (!/[\r\n]/.test(one)) lines.push(`${name}: ${one}`);
    }
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** Answers a connection that cannot be upgraded with a JSON error in the API's shape, and closes it. */
export function refuseUpgrade(client: Duplex, status: number, body: Record<string, unknown>): void {
  const text = JSON.stringify(body);
  const reason = status === 502 ? 'Bad Gateway' : status === 404 ? 'Not Found' : status === 400 ? 'Bad Request' : 'Error';
  client.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`);
}

/** `HTTP/1.1 101 ...`: the upstream switched protocols. */
const SWITCHED = /^HTTP\/1\.[01] 101\b/;
/** A status line longer than this is no 101. */
const MAX_STATUS_LINE = 8 * 1024;

/**
 * Connects to `target` and sends it `request`. Only once it answers 101 does the connection
 * become the upgraded protocol's: `head` (bytes the client sent after its request) goes on, and
 * bytes are piped both ways until either side closes. Any other answer passes back and ends the
 * exchange: nothing more the client sent reaches the upstream, since a pipelined request after a
 * declined upgrade would otherwise pass every check of the gateway (an internal route of the
 * sandbox API, say). `onUnreachable` answers the client when the upstream fails or closes before
 * anything came back.
 */
export function relayUpgrade(client: Duplex, target: net.NetConnectOpts, request: UpgradeRequest, head: Buffer, onUnreachable: (err: Error) => void): void {
  const upstream = net.connect({ ...target, noDelay: true } as net.NetConnectOpts);
  let answered = false;
  let settled = false;
  /** The upstream is done: before any answer the client hears why; after one, its end passes on. */
  const finish = (err?: Error) => {
    if (settled) return;
    settled = true;
    if (!answered) {
      client.resume();
      onUnreachable(err ?? new Error('the connection closed before any answer'));
    } else if (err) client.destroy();
    else client.end();
  };
  let start = Buffer.alloc(0);
  const onStatusLine = (chunk: Buffer) => {
    answered = true;
    start = Buffer.concat([start, chunk]);
    const lineEnd = start.indexOf('\r\n');
    if (lineEnd < 0 && start.length < MAX_STATUS_LINE) return;
    upstream.off('data', onStatusLine);
    client.write(start);
    if (lineEnd >= 0 && SWITCHED.test(start.subarray(0, lineEnd).toString('latin1'))) {
      if (head.length > 0) upstream.write(head);
      client.pipe(upstream);
    } else {
      // Declined: the upstream finishes its answer and closes; what the client sends is dropped.
      upstream.end();
      client.resume();
    }
    // Ended by `finish`, not by the pipe: a refusal must still be written to it.
    upstream.pipe(client, { end: false });
  };
  upstream.once('connect', () => upstream.write(requestHead(request)));
  upstream.on('data', onStatusLine);
  upstream.on('end', () => finish());
  upstream.on('error', (err) => finish(err));
  upstream.on('close', () => finish(new Error('the connection closed')));
  client.on('error', () => upstream.destroy());
  client.on('close', () => upstream.destroy());
}

/**
 * The connections a server handed to its `upgrade` listeners, still open. Node's
 * closeAllConnections() no longer sees a connection once upgraded, yet server.close() waits for
 * it: a WebSocket left open (a terminal, a port's) would hold a close forever. A server keeps
 * them here and cuts them when it closes.
 */
export class UpgradedConnections {
  private readonly open = new Set<Duplex>();

  /** Counts `socket` until it closes. */
  add(socket: Duplex): void {
    this.open.add(socket);
    socket.once('close', () => this.open.delete(socket));
  }

  /** Cuts every connection still open. */
  destroyAll(): void {
    for (const socket of this.open) socket.destroy();
  }
}
