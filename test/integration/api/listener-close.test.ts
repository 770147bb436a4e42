import { once } from 'node:events';
import net from 'node:net';
import { startTestApp, type TestApp } from '../../helpers/platform';

// Node's server.close() closes only the connections idle at that moment; one whose request has
// begun but not ended (here its headers are never finished) keeps the close waiting for Node's
// headers timeout, a minute. A closing base_url cuts what is left after its grace period instead.
jest.setTimeout(30_000);

let t: TestApp | undefined;

afterAll(async () => {
  await t?.close().catch(() => undefined);
});

test('close() ends while a connection is inside a request, and cuts that connection', async () => {
  t = await startTestApp();
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = t.app.server.address() as net.AddressInfo;
  const socket = net.connect({ host: '127.0.0.1', port });
  await once(socket, 'connect');
  const ended = once(socket, 'close');
  socket.write('GET /health HTTP/1.1\r\nHost: hangar.test\r\n');
  // The request has begun on the server's side once its parser saw the request line.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const closing = t.close();
  t = undefined;
  await closing;
  await ended;
  expect(socket.destroyed).toBe(true);
});
