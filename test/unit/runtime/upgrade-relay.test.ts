import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { relayUpgrade, type UpgradeRequest } from '../../../runtime/upgrade-relay';

// The gateway's upgrade relay between real sockets. The upstream here is a plain TCP server that
// answers each request head it reads, pipelined or not (as some HTTP servers do), either with a
// 101 (then echoes) or a 200 (and keeps the connection open).
let upstream: net.Server;
let target: net.NetConnectOpts;
const seen: string[] = [];

beforeAll(async () => {
  upstream = net.createServer((socket) => {
    let pending = '';
    let switched = false;
    socket.on('data', (chunk) => {
      if (switched) return void socket.write(chunk);
      pending += chunk.toString('latin1');
      for (let end = pending.indexOf('\r\n\r\n'); end >= 0 && !switched; end = pending.indexOf('\r\n\r\n')) {
        const head = pending.slice(0, end);
        pending = pending.slice(end + 4);
        seen.push(head.split('\r\n')[0]);
        if (head.startsWith('GET /ws ')) {
          switched = true;
          socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n');
          if (pending) socket.write(pending);
        } else {
          socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
        }
      }
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  target = { host: '127.0.0.1', port: (upstream.address() as AddressInfo).port };
});

afterAll(() => new Promise<void>((resolve) => upstream.close(() => resolve())));

beforeEach(() => {
  seen.length = 0;
});

const request = (path: string): UpgradeRequest => ({ method: 'GET', path, headers: { host: 'localhost', connection: 'Upgrade', upgrade: 'test' } });

/** A server standing for the gateway: each connection relayed to `to` as an upgrade of `path`, `head` as the bytes after it. */
async function relayServer(to: net.NetConnectOpts, path: string, head: Buffer): Promise<{ port: number; unreachable: string[]; close(): Promise<void> }> {
  const unreachable: string[] = [];
  const server = net.createServer((incoming) =>
    relayUpgrade(incoming, to, request(path), head, (err) => {
      unreachable.push((err as NodeJS.ErrnoException).code ?? err.message);
      incoming.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n');
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, unreachable, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/**
 * Connects to the relay, writes `send`, and collects what comes back until the relay closes the
 * connection or has been quiet for a while (a relay that wrongly keeps it open).
 */
function exchange(port: number, send: string, until?: (text: string) => boolean): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let text = '';
    let quiet = setTimeout(() => socket.destroy(), 1_000);
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      clearTimeout(quiet);
      quiet = setTimeout(() => socket.destroy(), 1_000);
      if (until?.(text)) socket.destroy();
    });
    socket.on('close', () => {
      clearTimeout(quiet);
      resolve(text);
    });
    socket.on('error', () => undefined);
    if (send) socket.write(send);
  });
}

test('after a 101, bytes flow both ways; what the client sent after its request goes on too', async () => {
  const relay = await relayServer(target, '/ws', Buffer.from('early'));
  const text = await exchange(relay.port, 'late', (received) => received.endsWith('earlylate'));
  expect(text).toMatch(/^HTTP\/1\.1 101 Switching Protocols\r\n[^]*\r\n\r\nearlylate$/);
  expect(seen).toEqual(['GET /ws HTTP/1.1']);
  await relay.close();
});

test('a declined upgrade passes its answer back and ends: a request pipelined after it never reaches the upstream', async () => {
  const relay = await relayServer(target, '/health', Buffer.from('GET /internal/activity HTTP/1.1\r\nhost: localhost\r\n\r\n'));
  const text = await exchange(relay.port, 'GET /internal/reload HTTP/1.1\r\nhost: localhost\r\n\r\n');
  expect(text).toBe('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
  expect(seen).toEqual(['GET /health HTTP/1.1']);
  await relay.close();
});

test('an upstream nothing listens on is answered by onUnreachable, once', async () => {
  const closed = net.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const relay = await relayServer({ host: '127.0.0.1', port }, '/ws', Buffer.alloc(0));
  expect(await exchange(relay.port, '')).toBe('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n');
  expect(relay.unreachable).toEqual(['ECONNREFUSED']);
  await relay.close();
});
