import net from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * An HTTP upgrade (WebSocket and the like) relayed one hop further, as the host's gateway does to
 * the sandbox's API and the API does to a port of the sandbox: the request's head is written again
 * to the next hop, then bytes are piped both ways untouched. The answer (101 or a refusal) comes
 * back in those bytes, so neither hop parses it or the frames after it. Shared by both hops, so it
 * lives in the contract.
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

/**
 * Connects to `target`, sends it `request` and `head` (bytes the client sent after its request),
 * then pipes the two connections into each other until either closes. `onUnreachable` answers the
 * client when the connection fails before anything came back.
 */
export function relayUpgrade(client: Duplex, target: net.NetConnectOpts, request: UpgradeRequest, head: Buffer, onUnreachable: (err: Error) => void): void {
  const upstream = net.connect({ ...target, noDelay: true } as net.NetConnectOpts);
  let answered = false;
  let refused = false;
  /** Before any answer the client hears why; after one, the connection just ends. */
  const fail = (err: Error) => {
    if (refused) return;
    // An ended client still flushes what it was given; one left open is cut.
    if (answered || !client.writable) return void (client.writableEnded ? undefined : client.destroy());
    refused = true;
    onUnreachable(err);
  };
  upstream.once('data', () => (answered = true));
  upstream.once('connect', () => {
    upstream.write(requestHead(request));
    if (head.length > 0) upstream.write(head);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  upstream.on('error', fail);
  upstream.on('close', () => fail(new Error('the connection closed before any answer')));
  client.on('error', () => upstream.destroy());
  client.on('close', () => upstream.destroy());
}
