import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { proxyRequest } from '../../../runtime/http-proxy';

// The gateways' streaming proxy between real sockets: an upstream on a Unix socket (as a
// workload's forwarder is) and a plain HTTP server in front of it.
const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-proxy-'));
const socketPath = path.join(folder, 'upstream.sock');
const upstreamAgent = new http.Agent({ keepAlive: true });
let upstream: http.Server;
let proxy: http.Server;
let proxyUrl: string;
let upstreamConnections = 0;
let releaseStream: () => void = () => undefined;
let upstreamRequestClosed: Promise<void> = Promise.resolve();

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    if (req.url === '/stream') {
      // Headers now, the first event only once the test has seen them.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      releaseStream = () => res.end('data: one\n\n');
      return;
    }
    if (req.url === '/hang') {
      upstreamRequestClosed = new Promise((resolve) => res.once('close', () => resolve()));
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
      return;
    }
    const body = JSON.stringify({ url: req.url, headers: req.headers });
    if (req.url === '/sized') {
      res.setHeader('content-type', 'application/json');
      res.end(body);
    } else {
      // writeHead before the body: Node answers chunked, as most agents do.
      res.writeHead(201, { 'content-type': 'application/json', 'x-from': 'upstream' });
      res.end(body);
    }
  });
  upstream.on('connection', () => upstreamConnections++);
  await new Promise<void>((resolve) => upstream.listen(socketPath, resolve));
  proxy = http.createServer((req, res) =>
    proxyRequest(req, res, {
      upstream: { socketPath: req.url === '/nowhere' ? path.join(folder, 'missing.sock') : socketPath },
      path: req.url ?? '/',
      headers: { 'x-service-caller': 'tester' },
      agent: upstreamAgent,
      onUnreachable: () => {
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'unreachable' }));
      },
    }),
  );
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});

afterAll(async () => {
  upstreamAgent.destroy();
  proxy.closeAllConnections();
  upstream.closeAllConnections();
  await new Promise((resolve) => proxy.close(resolve));
  await new Promise((resolve) => upstream.close(resolve));
  fs.rmSync(folder, { recursive: true, force: true });
});

test('a streamed answer shows its headers before its first event', async () => {
  // fetch resolves on the headers: they must arrive while the upstream still holds the body back.
  const response = await fetch(`${proxyUrl}/stream`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/event-stream');
  releaseStream();
  expect(await response.text()).toBe('data: one\n\n');
});

test('sized and chunked answers arrive whole, with status and headers, over one kept-alive upstream connection', async () => {
  const before = upstreamConnections;
  const sized = await fetch(`${proxyUrl}/sized`);
  expect(sized.status).toBe(200);
  expect(((await sized.json()) as { url: string }).url).toBe('/sized');
  const chunked = await fetch(`${proxyUrl}/chunked?x=1`, { method: 'POST', body: 'hello', headers: { 'content-type': 'text/plain' } });
  expect(chunked.status).toBe(201);
  expect(chunked.headers.get('x-from')).toBe('upstream');
  expect(((await chunked.json()) as { url: string }).url).toBe('/chunked?x=1');
  expect(upstreamConnections - before).toBeLessThanOrEqual(1);
});

test('credentials and hop-by-hop headers stay behind; the others and the extra headers go upstream', async () => {
  const response = await fetch(`${proxyUrl}/echo`, {
    headers: { authorization: 'Bearer secret', 'x-service-authorization': 'Bearer other', 'x-thread': 't1' },
  });
  const { headers } = (await response.json()) as { headers: Record<string, string> };
  expect(headers.authorization).toBeUndefined();
  expect(headers['x-service-authorization']).toBeUndefined();
  expect(headers['x-thread']).toBe('t1');
  expect(headers['x-service-caller']).toBe('tester');
});

test('an upstream that cannot be reached answers through onUnreachable', async () => {
  const response = await fetch(`${proxyUrl}/nowhere`);
  expect(response.status).toBe(502);
  expect(await response.json()).toEqual({ error: 'unreachable' });
});

test('a client that goes away ends the upstream request', async () => {
  const controller = new AbortController();
  const response = await fetch(`${proxyUrl}/hang`, { signal: controller.signal });
  const reader = response.body!.getReader();
  expect(new TextDecoder().decode((await reader.read()).value)).toBe('partial');
  controller.abort();
  await upstreamRequestClosed;
});
