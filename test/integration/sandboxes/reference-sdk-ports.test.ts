import { SandboxInstance } from '@blaxel/core';
import fs from 'node:fs';
import path from 'node:path';
import { unique } from '../../helpers/platform';
import { deployedSandbox, startReferenceSdkPlatform, type ReferenceSdkPlatform } from '../../helpers/reference-sdk';
import { nextTextFrame, openWebSocket, textFrame } from '../../helpers/websocket';

// {sandbox_url}/port/{port}/... driven by the reference SDK's own `sandbox.fetch` (issue 16), and
// WebSocket upgrades through the same path. A small echo server runs in the sandbox
// (test/fixtures/port-echo-server.js). Real sandboxes on a busy machine: no test asserts on time.
jest.setTimeout(90_000);

const name = unique('sdk-ports');
const ECHO_PORT = 8000;
const IDLE_SECONDS = 2;
let hangar: ReferenceSdkPlatform | undefined;
let sandbox: SandboxInstance;

beforeAll(async () => {
  // A short idle period, so that a test can see an open WebSocket keep the sandbox out of standby.
  hangar = await startReferenceSdkPlatform('sdkports', { sandboxIdleSeconds: IDLE_SECONDS });
  await SandboxInstance.create({ metadata: { name }, spec: { runtime: { image: 'hangar/base:latest', memory: 256 } } });
  sandbox = await deployedSandbox(name, 60_000);
  await sandbox.fs.write('/tmp/port-echo-server.js', fs.readFileSync(path.join(__dirname, '../../fixtures/port-echo-server.js'), 'utf8'));
  await sandbox.process.exec({ name: 'echo', command: `node /tmp/port-echo-server.js ${ECHO_PORT}`, waitForPorts: [ECHO_PORT] });
}, 120_000);

afterAll(() => hangar?.stop(), 60_000);

/** What the echo server saw of a request. */
interface Echo {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

describe('sandbox.fetch through /port/{port}', () => {
  test('GET reaches the port with the path, query and headers as sent; status and headers come back', async () => {
    const response = await sandbox.fetch(ECHO_PORT, '/files/a%20b/?q=1&path=%2Fetc&q=2', { headers: { 'X-Trace': 'abc', Accept: 'application/json' } });
    expect(response.status).toBe(201);
    expect(response.headers.get('x-echo')).toBe('yes');
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    const echo = (await response.json()) as Echo;
    expect(echo).toMatchObject({ method: 'GET', url: '/files/a%20b/?q=1&path=%2Fetc&q=2', body: '' });
    expect(echo.headers).toMatchObject({ 'x-trace': 'abc', accept: 'application/json', host: `localhost:${ECHO_PORT}` });
    // The caller's platform credential stays outside the sandbox.
    expect(Object.keys(echo.headers).filter((header) => /authorization/i.test(header))).toEqual([]);
  });

  test('POST, PUT and DELETE carry their bodies both ways; the port root is "/"', async () => {
    const body = JSON.stringify({ text: 'x'.repeat(200_000), unicode: 'é€😀' });
    const posted = (await (await sandbox.fetch(ECHO_PORT, '/submit', { method: 'POST', body, headers: { 'Content-Type': 'application/json' } })).json()) as Echo;
    expect(posted).toMatchObject({ method: 'POST', url: '/submit', body });
    expect(posted.headers['content-type']).toBe('application/json');

    const put = (await (await sandbox.fetch(ECHO_PORT, 'items/7', { method: 'PUT', body: 'plain' })).json()) as Echo;
    expect(put).toMatchObject({ method: 'PUT', url: '/items/7', body: 'plain' });
    expect(((await (await sandbox.fetch(ECHO_PORT, '/items/7', { method: 'DELETE' })).json()) as Echo).method).toBe('DELETE');
    expect(((await (await sandbox.fetch(ECHO_PORT)).json()) as Echo).url).toBe('/');
  });

  test('a port out of range or not a number is a 400 naming the port', async () => {
    for (const port of [0, 65536, 70000, 'web', '80a', '-1']) {
      const response = await sandbox.fetch(port as number, '/');
      expect([port, response.status]).toEqual([port, 400]);
      expect(await response.json()).toEqual({ error: 'bad_request', message: expect.stringMatching(/^port must be an integer from 1 to 65535, got '/) });
    }
  });

  test('a port nothing listens on is a 502 saying so', async () => {
    const response = await sandbox.fetch(8999, '/anything');
    expect(response.status).toBe(502);
    expect(await response.json()).toEqual({ error: 'port_unreachable', message: expect.stringMatching(/^nothing answered on port 8999 in the sandbox; is a server listening on 127.0.0.1:8999 there\?/) });
  });
});

describe('WebSocket upgrades through /port/{port}', () => {
  const auth = () => ({ 'X-Service-Authorization': `Bearer ${hangar!.tenant.admin.apiKey}` });

  test('an upgrade with the caller\'s credential reaches the port with its path and query, and frames go both ways', async () => {
    // Without a credential it goes nowhere, as any sandbox call.
    const anonymous = await openWebSocket(`${sandbox.metadata.url}/port/${ECHO_PORT}/socket`);
    expect(anonymous).toMatchObject({ upgraded: false, status: 401 });
    expect(JSON.parse((anonymous as { body: string }).body)).toMatchObject({ error: 'unauthorized' });

    const opening = await openWebSocket(`${sandbox.metadata.url}/port/${ECHO_PORT}/socket?room=7`, auth());
    if (!opening.upgraded) throw new Error(`not upgraded: ${opening.status} ${opening.body}`);
    expect(opening.headers['x-path']).toBe('/socket?room=7');
    for (const text of ['hello', 'through the gateway', 'é€😀']) {
      const echoed = nextTextFrame(opening.socket);
      opening.socket.write(textFrame(text));
      expect(await echoed).toBe(text);
    }
    opening.socket.destroy();
  });

  test('an open WebSocket to a port keeps the sandbox out of standby, though its bytes pass the sandbox API by', async () => {
    const opening = await openWebSocket(`${sandbox.metadata.url}/port/${ECHO_PORT}/socket`, auth());
    if (!opening.upgraded) throw new Error(`not upgraded: ${opening.status} ${opening.body}`);
    const { rows } = await hangar!.t.app.pg.query<{ id: string }>("SELECT id FROM resources WHERE kind = 'sandboxes' AND name = $1", [name]);
    // Three idle periods with the connection open and silent: a sandbox taken for idle would be
    // frozen by now, and its echo server with it (nothing on this connection would thaw it).
    await new Promise((resolve) => setTimeout(resolve, 3 * IDLE_SECONDS * 1000));
    expect(await hangar!.runtime.isFrozen(rows[0].id)).toBe(false);
    const echoed = nextTextFrame(opening.socket);
    opening.socket.write(textFrame('still here'));
    expect(await echoed).toBe('still here');
    opening.socket.destroy();
  });

  test('an upgrade to a port nothing listens on, or to a bad port, is refused in the API\'s shape', async () => {
    const nobody = await openWebSocket(`${sandbox.metadata.url}/port/8999/socket`, auth());
    expect(nobody).toMatchObject({ upgraded: false, status: 502 });
    expect(JSON.parse((nobody as { body: string }).body)).toEqual({ error: 'port_unreachable', message: expect.stringMatching(/^nothing answered on port 8999 in the sandbox/) });
    const badPort = await openWebSocket(`${sandbox.metadata.url}/port/0/socket`, auth());
    expect(badPort).toMatchObject({ upgraded: false, status: 400 });
    expect(JSON.parse((badPort as { body: string }).body)).toEqual({ error: 'bad_request', message: "port must be an integer from 1 to 65535, got '0'" });
  });
});
