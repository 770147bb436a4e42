import crypto from 'node:crypto';
import http from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Just enough of a WebSocket client to prove that an upgrade goes through a proxy: the opening
 * handshake (its accept key checked) and small text frames. Node 20 has no WebSocket client.
 */
export type WebSocketOpening =
  | { upgraded: true; socket: Duplex; headers: http.IncomingHttpHeaders }
  | { upgraded: false; status: number; body: string };

const WEBSOCKET_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** Asks `url` for a WebSocket; answers the upgraded connection, or the refusal's status and body. */
export function openWebSocket(url: string, headers: Record<string, string> = {}): Promise<WebSocketOpening> {
  const key = crypto.randomBytes(16).toString('base64');
  return new Promise((resolve, reject) => {
    const request = http.request(url, { headers: { ...headers, connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': key } });
    request.on('upgrade', (response, socket) => {
      const expected = crypto.createHash('sha1').update(`${key}${WEBSOCKET_GUID}`).digest('base64');
      if (response.headers['sec-websocket-accept'] !== expected) reject(new Error(`bad Sec-WebSocket-Accept: ${response.headers['sec-websocket-accept']}`));
      else resolve({ upgraded: true, socket, headers: response.headers });
    });
    request.on('response', (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve({ upgraded: false, status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
    request.end();
  });
}

/** A masked (client) text frame of under 126 bytes. */
export function textFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  if (payload.length > 125) throw new Error('textFrame: small frames only');
  const mask = crypto.randomBytes(4);
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, Buffer.from(payload.map((byte, i) => byte ^ mask[i % 4]))]);
}

/** The next unmasked (server) text frame's text; small frames only. */
export function nextTextFrame(socket: Duplex): Promise<string> {
  return new Promise((resolve, reject) => {
    let pending = Buffer.alloc(0);
    const onData = (data: Buffer) => {
      pending = Buffer.concat([pending, data]);
      if (pending.length < 2 || pending.length < 2 + (pending[1] & 0x7f)) return;
      socket.off('data', onData);
      resolve(pending.subarray(2, 2 + (pending[1] & 0x7f)).toString());
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.once('close', () => reject(new Error('the WebSocket closed before a frame came')));
  });
}
