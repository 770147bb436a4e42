import { SandboxInstance, updateSandboxPreview, type SandboxPreview } from '@blaxel/core';
import type { FastifyInstance } from 'fastify';
import http from 'node:http';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { sandboxGatewayConfig, useReferenceSdk } from '../../helpers/reference-sdk';
import { startSandboxPlatform, stopRuntimeTest } from '../../helpers/runtime-platform';
import type { testRuntime } from '../../helpers/sandbox-runtime';
import { eventually, type RunningWorker } from '../../helpers/workers';

// Previews, preview tokens and sessions driven by the reference SDK (test/helpers/reference-sdk.ts),
// and their URLs called as a browser or curl would: with no platform credential at all.
// Real sandboxes on a busy 2-core machine: generous limits; no test asserts on time.
jest.setTimeout(120_000);

let t: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let apiOrigin: string;
let gateway: FastifyInstance;
let control: RunningWorker;
let node: RunningWorker;
let runtime: ReturnType<typeof testRuntime>;
let restoreFetch: () => void = () => undefined;
let sandbox: SandboxInstance;

const name = unique('prev');
const PORT = 8000;
/**
 * An app inside the sandbox that answers what it received; /own-cors sets its own CORS header,
 * /slow/{ms} answers after that long, and an upgrade is accepted and its bytes echoed back.
 */
const ECHO_SERVER = `const server = require('http').createServer((req, res) => {
  res.setHeader('content-type', 'application/json');
  if (req.url.startsWith('/own-cors')) res.setHeader('access-control-allow-origin', 'https://own.example');
  const delay = req.url.startsWith('/slow/') ? Number(req.url.slice(6)) : 0;
  setTimeout(() => res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers })), delay);
});
server.on('upgrade', (req, socket) => {
  socket.write('HTTP/1.1 101 Switching Protocols\\r\\nupgrade: echo\\r\\nconnection: Upgrade\\r\\nx-url: ' + req.url + '\\r\\nx-token-seen: ' + String(Boolean(req.headers['x-service-preview-token'])) + '\\r\\n\\r\\n');
  socket.pipe(socket);
});
server.listen(${PORT}, '0.0.0.0');
`;

beforeAll(async () => {
  const sandboxUrls = await sandboxGatewayConfig();
  // A short idle time: the standby test waits for it.
  t = await startTestApp({ taskQueue: unique('reference-sdk-previews'), sandboxIdleSeconds: 3, ...sandboxUrls });
  tenant = await createTenant(t.app.pg, 'sdkprev');
  other = await createTenant(t.app.pg, 'sdkother');
  ({ runtime, gateway, control, node } = await startSandboxPlatform(t));
  apiOrigin = await t.app.listen({ host: '127.0.0.1', port: 0 });
  const sandboxOrigin = await gateway.listen({ host: sandboxUrls.host, port: sandboxUrls.sandboxPort });
  restoreFetch = useReferenceSdk({ apiOrigin, sandboxOrigin, apiKey: tenant.admin.apiKey, workspace: tenant.workspace });
  await SandboxInstance.create({ metadata: { name }, spec: { runtime: { image: 'hangar/base:latest', memory: 256 } } });
  sandbox = await eventually(`${name} DEPLOYED`, async () => {
    const s = await SandboxInstance.get(name);
    if (s.status === 'FAILED') throw new Error(`${name} FAILED`);
    return s.status === 'DEPLOYED' ? s : undefined;
  }, 60_000);
  await sandbox.fs.write('/tmp/echo.js', ECHO_SERVER);
  await sandbox.process.exec({ name: 'echo', command: 'node /tmp/echo.js', waitForPorts: [PORT] });
}, 120_000);

afterAll(async () => {
  restoreFetch();
  await stopRuntimeTest({ runtime, node, control, gateway, t });
}, 60_000);

interface Echo {
  method: string;
  url: string;
  headers: Record<string, string>;
}

/** A request to a preview URL with nothing but the given headers: no API key. */
async function call(url: string, init: RequestInit = {}): Promise<{ status: number; headers: Headers; body: unknown }> {
  const response = await fetch(url, init);
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: kept as text
  }
  return { status: response.status, headers: response.headers, body };
}

/** What a rejected SDK call threw, as text (the SDK throws the error body it got). */
async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    return err instanceof Error ? err.message : JSON.stringify(err);
  }
  throw new Error('expected the call to fail');
}

/** A management call as `who` in `workspace`, outside the SDK. */
function manage(who: TestTenant, workspace: string, path: string, init: RequestInit = {}) {
  return call(`${apiOrigin}/v0${path}`, { ...init, headers: { authorization: `Bearer ${who.admin.apiKey}`, 'x-service-workspace': workspace, 'content-type': 'application/json', ...init.headers } });
}

const urlOf = (preview: SandboxPreview) => (preview.spec as { url: string }).url;
const inAMinute = () => new Date(Date.now() + 60_000);

describe('public previews', () => {
  test('a public preview reaches the port without any credential; get and list show it', async () => {
    const preview = await sandbox.previews.create({ metadata: { name: 'public-web' }, spec: { port: PORT, public: true } });
    expect(preview.metadata).toMatchObject({ name: 'public-web', resourceName: name, workspace: tenant.workspace });
    const url = urlOf(preview);
    expect((preview.metadata as { url?: string }).url).toBe(url);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/_previews\/[a-z0-9]+$/);

    const answer = await call(`${url}/hello/world?x=1`);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ method: 'GET', url: '/hello/world?x=1' });

    expect((await sandbox.previews.get('public-web')).spec).toMatchObject({ port: PORT, public: true, url });
    expect((await sandbox.previews.list()).map((p) => p.name)).toContain('public-web');
  });

  test('prefixUrl names the preview in its URL, with the workspace after it', async () => {
    const preview = await sandbox.previews.create({ metadata: { name: 'prefixed' }, spec: { port: PORT, public: true, prefixUrl: 'myapp' } });
    expect(urlOf(preview)).toMatch(new RegExp(`/_previews/myapp-${tenant.workspace}$`));
    expect((await call(`${urlOf(preview)}/p`)).body).toMatchObject({ url: '/p' });
    // Another preview of the workspace may not take it, unless forced (then the first one is gone).
    expect(await failure(sandbox.previews.create({ metadata: { name: 'prefixed-2' }, spec: { port: PORT, public: true, prefixUrl: 'myapp' } }))).toMatch(/409|conflict/);
    await sandbox.previews.create({ metadata: { name: 'prefixed-2' }, spec: { port: PORT, public: true, prefixUrl: 'myapp' } }, true);
    expect((await sandbox.previews.list()).map((p) => p.name)).not.toContain('prefixed');
  });

  test('an update (PUT of what get shows) takes effect on the URL at once: public -> private', async () => {
    const preview = await sandbox.previews.create({ metadata: { name: 'turning' }, spec: { port: PORT, public: true } });
    expect((await call(`${urlOf(preview)}/t`)).status).toBe(200);
    const { data } = await updateSandboxPreview({
      path: { sandboxName: name, previewName: 'turning' },
      body: { metadata: preview.metadata, spec: { ...preview.spec, public: false } },
      throwOnError: true,
    });
    expect(data.spec).toMatchObject({ port: PORT, public: false, url: urlOf(preview) });
    const refused = await eventually('private after the update', async () => {
      const answer = await call(`${urlOf(preview)}/t`);
      return answer.status === 200 ? undefined : answer;
    });
    expect(refused).toMatchObject({ status: 401, body: { error: 'preview_token_required' } });
  });

  test('createIfNotExists creates a missing preview, then finds it', async () => {
    const request = { metadata: { name: 'once' }, spec: { port: PORT, public: true } };
    const first = await sandbox.previews.createIfNotExists(request);
    const second = await sandbox.previews.createIfNotExists(request);
    expect(second.spec).toMatchObject({ url: urlOf(first) });
    expect((await sandbox.previews.list()).filter((p) => p.name === 'once')).toHaveLength(1);
  });

  test('a port out of range is a 400 naming spec.port, and nothing is created', async () => {
    for (const port of [0, 70_000]) {
      const message = await failure(sandbox.previews.create({ metadata: { name: `bad-${port}` }, spec: { port, public: true } }));
      expect(message).toMatch(/body\.spec\.port/);
      expect(message).toMatch(/bad_request/);
    }
    expect((await sandbox.previews.list()).map((p) => p.name)).not.toEqual(expect.arrayContaining(['bad-0', 'bad-70000']));
  });
});

describe('private previews', () => {
  let preview: SandboxPreview;

  beforeAll(async () => {
    preview = await sandbox.previews.create({
      metadata: { name: 'private-web' },
      spec: { port: PORT, public: false, requestHeaders: { 'X-From-Preview': 'yes' }, responseHeaders: { 'Access-Control-Allow-Origin': 'https://app.example', 'X-Preview': 'on' } },
    });
  });

  test('without a token, or with a wrong one, or with an API key instead, the answer is 401', async () => {
    const url = urlOf(preview);
    expect(await call(`${url}/x`)).toMatchObject({ status: 401, body: { error: 'preview_token_required' } });
    expect(await call(`${url}/x`, { headers: { 'X-Service-Preview-Token': 'not-a-token' } })).toMatchObject({ status: 401, body: { error: 'invalid_preview_token' } });
    expect(await call(`${url}/x?bl_preview_token=not-a-token`)).toMatchObject({ status: 401, body: { error: 'invalid_preview_token' } });
    expect(await call(`${url}/x`, { headers: { authorization: `Bearer ${tenant.admin.apiKey}` } })).toMatchObject({ status: 401 });
  });

  test('its token opens it by header and by query; the app sees the request headers, not the token', async () => {
    const token = await preview.tokens.create(inAMinute());
    expect(token.value).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    const url = urlOf(preview);

    const byHeader = await call(`${url}/h?a=b`, { headers: { 'X-Service-Preview-Token': token.value } });
    expect(byHeader.status).toBe(200);
    const echo = byHeader.body as Echo;
    expect(echo.url).toBe('/h?a=b');
    expect(echo.headers['x-from-preview']).toBe('yes');
    expect(echo.headers['x-service-preview-token']).toBeUndefined();
    expect(byHeader.headers.get('x-preview')).toBe('on');

    for (const parameter of ['bl_preview_token', 'preview_token']) {
      const byQuery = await call(`${url}/q?a=b&${parameter}=${encodeURIComponent(token.value)}`);
      expect(byQuery.status).toBe(200);
      expect((byQuery.body as Echo).url).toBe('/q?a=b');
    }
    // The reference lists tokens with their values.
    expect((await preview.tokens.list()).map((t) => t.value)).toContain(token.value);
  });

  test('a deleted token stops as soon as the gateway hears of it; an expired one stops the moment it expires', async () => {
    const url = urlOf(preview);
    const deleted = await preview.tokens.create(inAMinute());
    const listed = (await manage(tenant, tenant.workspace, `/sandboxes/${name}/previews/private-web/tokens`)).body as { metadata: { name: string }; spec: { token: string } }[];
    const tokenName = listed.find((t) => t.spec.token === deleted.value)!.metadata.name;
    expect((await call(`${url}/d`, { headers: { 'X-Service-Preview-Token': deleted.value } })).status).toBe(200);
    await preview.tokens.delete(tokenName);
    // Gateways hear of a deletion by a notice (PostgreSQL NOTIFY), a moment after it commits.
    const refused = await eventually('deleted token refused', async () => {
      const answer = await call(`${url}/d`, { headers: { 'X-Service-Preview-Token': deleted.value } });
      return answer.status === 200 ? undefined : answer;
    });
    expect(refused).toMatchObject({ status: 401, body: { error: 'invalid_preview_token' } });

    const expiresAt = new Date(Date.now() + 1_500);
    const shortLived = await preview.tokens.create(expiresAt);
    // Cached by the gateway once used, it must still stop when its time has come.
    await call(`${url}/e`, { headers: { 'X-Service-Preview-Token': shortLived.value } });
    while (Date.now() <= expiresAt.getTime()) await new Promise((r) => setTimeout(r, 100));
    expect(await call(`${url}/e`, { headers: { 'X-Service-Preview-Token': shortLived.value } })).toMatchObject({ status: 401, body: { error: 'preview_token_expired' } });
    expect((await preview.tokens.list()).find((t) => t.value === shortLived.value)?.expired).toBe(true);
  });

  test('an expired token is refused at creation with a 400 naming spec.expiresAt', async () => {
    expect(await failure(preview.tokens.create(new Date(Date.now() - 1_000)))).toMatch(/body\.spec\.expiresAt/);
  });

  test('CORS: a preflight is answered without a token as the response headers say; answers carry them unless the app set its own', async () => {
    const url = urlOf(preview);
    const preflight = await call(`${url}/api`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(preflight.headers.get('access-control-allow-methods')).toMatch(/POST/);
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/X-Service-Preview-Token/);

    const token = await preview.tokens.create(inAMinute());
    const headers = { 'X-Service-Preview-Token': token.value, origin: 'https://app.example' };
    expect((await call(`${url}/api`, { headers })).headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect((await call(`${url}/own-cors`, { headers })).headers.get('access-control-allow-origin')).toBe('https://own.example');
  });
});

/** An upgrade request to `url`: the refusal's status, or the upgraded socket's headers and what it echoed of `ping`. */
function upgrade(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers?: http.IncomingHttpHeaders; echoed?: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { headers: { connection: 'Upgrade', upgrade: 'echo', ...headers } });
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0 });
    });
    req.on('upgrade', (res, socket) => {
      socket.write('ping');
      socket.once('data', (data: Buffer) => {
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, echoed: data.toString() });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('upgrades (WebSocket)', () => {
  test('an upgrade reaches the app through a private preview with its token in the query, and is refused without it', async () => {
    const preview = await sandbox.previews.create({ metadata: { name: 'live' }, spec: { port: PORT, public: false } });
    const token = await preview.tokens.create(inAMinute());
    expect(await upgrade(`${urlOf(preview)}/hmr`)).toEqual({ status: 401 });

    const upgraded = await upgrade(`${urlOf(preview)}/hmr?v=1&bl_preview_token=${encodeURIComponent(token.value)}`);
    expect(upgraded).toMatchObject({ status: 101, echoed: 'ping' });
    // The app sees its own path and query, not the preview's token.
    expect(upgraded.headers).toMatchObject({ 'x-url': '/hmr?v=1', 'x-token-seen': 'false' });
  });
});

describe('preview expiry and deletion', () => {
  test('a preview stops the moment its expiry passes, and once its deletion is heard of', async () => {
    const expires = new Date(Date.now() + 2_000);
    const expiring = await sandbox.previews.create({ metadata: { name: 'expiring' }, spec: { port: PORT, public: true, expires: expires.toISOString() } });
    expect((await call(`${urlOf(expiring)}/a`)).status).toBe(200);
    while (Date.now() <= expires.getTime()) await new Promise((r) => setTimeout(r, 100));
    expect(await call(`${urlOf(expiring)}/a`)).toMatchObject({ status: 410, body: { error: 'preview_expired' } });
    // And it is deleted, not only refused: the next call on the sandbox's previews drops it.
    expect(await failure(sandbox.previews.get('expiring'))).toMatch(/not_found/);

    const doomed = await sandbox.previews.create({ metadata: { name: 'doomed' }, spec: { port: PORT, public: true } });
    expect((await call(`${urlOf(doomed)}/a`)).status).toBe(200);
    await sandbox.previews.delete('doomed');
    const gone = await eventually('deleted preview refused', async () => {
      const answer = await call(`${urlOf(doomed)}/a`);
      return answer.status === 200 ? undefined : answer;
    });
    expect(gone).toMatchObject({ status: 404, body: { error: 'preview_not_found' } });
    expect(await failure(sandbox.previews.get('doomed'))).toMatch(/404|not_found/);
  });

  test('a past expiry is refused with a 400 naming spec.expires', async () => {
    const message = await failure(sandbox.previews.create({ metadata: { name: 'past' }, spec: { port: PORT, public: true, expires: new Date(Date.now() - 60_000).toISOString() } }));
    expect(message).toMatch(/body\.spec\.expires/);
  });
});

describe('sessions', () => {
  test('fromSession drives fs and process through the session, with no API key; deleting the session ends it', async () => {
    const session = await sandbox.sessions.create({ expiresAt: new Date(Date.now() + 3_600_000) });
    expect(session.token).toBeTruthy();
    const remote = await SandboxInstance.fromSession(session);
    await remote.fs.write('/tmp/session/note.txt', 'written through a session\n');
    expect(await remote.fs.read('/tmp/session/note.txt')).toBe('written through a session\n');
    expect(await sandbox.fs.read('/tmp/session/note.txt')).toBe('written through a session\n');
    expect(await remote.process.exec({ command: 'echo via-session', waitForCompletion: true })).toMatchObject({ exitCode: 0 });

    expect((await sandbox.sessions.list()).map((s) => [s.name, s.token])).toContainEqual([session.name, session.token]);
    // The session's URL without its token: an API key is no substitute.
    expect((await call(`${session.url}/filesystem/tmp/session/note.txt`, { headers: { authorization: `Bearer ${tenant.admin.apiKey}` } })).status).toBe(401);
    // The agent's internal routes stay out of reach through a session too.
    expect((await call(`${session.url}/internal/activity`, { headers: { 'X-Service-Preview-Token': session.token } })).status).toBe(404);

    // The sandbox API is never public: anyone with its URL could run commands.
    expect(await failure(sandbox.previews.create({ metadata: { name: 'open-api' }, spec: { port: 443, public: true } }))).toMatch(/body\.spec\.public/);

    await sandbox.sessions.delete(session.name);
    expect(await sandbox.sessions.list()).toEqual([]);
    // Gateways hear of a deletion by a notice (PostgreSQL NOTIFY), a moment after it commits.
    const refused = await eventually('session refused', async () => failure(remote.fs.read('/tmp/session/note.txt')).catch(() => undefined));
    expect(refused).toMatch(/preview_not_found/);
  });
});

describe('isolation', () => {
  test('another workspace neither sees the previews nor opens them with its own tokens', async () => {
    const listed = await manage(other, other.workspace, `/sandboxes/${name}/previews`);
    expect(listed.status).toBe(404);
    expect((await manage(other, tenant.workspace, `/sandboxes/${name}/previews`)).status).toBe(403);
    expect((await manage(other, tenant.workspace, `/sandboxes/${name}/previews/private-web/tokens`, { method: 'POST', body: JSON.stringify({ spec: { expiresAt: inAMinute().toISOString() } }) })).status).toBe(403);

    // A token of one preview opens no other.
    const a = await sandbox.previews.create({ metadata: { name: 'iso-a' }, spec: { port: PORT, public: false } });
    const b = await sandbox.previews.create({ metadata: { name: 'iso-b' }, spec: { port: PORT, public: false } });
    const tokenOfA = await a.tokens.create(inAMinute());
    expect((await call(`${urlOf(a)}/x`, { headers: { 'X-Service-Preview-Token': tokenOfA.value } })).status).toBe(200);
    expect((await call(`${urlOf(b)}/x`, { headers: { 'X-Service-Preview-Token': tokenOfA.value } })).status).toBe(401);
  });
});

describe('standby', () => {
  test('a request to a preview of a sandbox in standby resumes it and succeeds', async () => {
    const preview = await sandbox.previews.create({ metadata: { name: 'sleepy' }, spec: { port: PORT, public: true } });
    const state = async () => ((await manage(tenant, tenant.workspace, `/sandboxes/${name}`)).body as { state: string }).state;
    await eventually('standby', async () => ((await state()) === 'STANDBY' ? true : undefined), 60_000);
    const answer = await call(`${urlOf(preview)}/wake`);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ url: '/wake' });
    await eventually('running again', async () => ((await state()) === 'RUNNING' ? true : undefined), 30_000);
  });

  test('a request answered slower than the idle time keeps the sandbox from standby until it is answered', async () => {
    const preview = await sandbox.previews.get('sleepy');
    // The app answers after twice the idle time (3 s); frozen half-way, it would never answer
    // (the signal only bounds such a hang).
    const answer = await call(`${urlOf(preview)}/slow/6000`, { signal: AbortSignal.timeout(60_000) });
    expect(answer).toMatchObject({ status: 200, body: { url: '/slow/6000' } });
  });
});
