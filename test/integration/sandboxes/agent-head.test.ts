import fs from 'node:fs';
import http from 'node:http';
import type { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import type { SandboxHandle } from '../../../runtime/sandbox-runtime';
import { AGENT_ROUTES } from '../../../sandbox-agent/contract/routes';
import { callSandbox, exec, runtimeDataDir, sandboxSpec, testRuntime, until } from '../../helpers/sandbox-runtime';

// HEAD on every GET of the sandbox API, answered by the GET route itself: the same status and
// headers, no body (Node drops it), and a streaming GET's HEAD ends. A real sandbox, over its socket.
jest.setTimeout(60_000);

const dataDir = runtimeDataDir('sandbox-head');
let runtime: BwrapRuntime;
let sandbox: SandboxHandle;
let sleeper: { pid: number };
let uploadId: string;
const call = (method: string, url: string, body?: unknown) => callSandbox(sandbox.socketPath, method, url, body);

beforeAll(async () => {
  runtime = testRuntime(dataDir);
  sandbox = await runtime.start(sandboxSpec({ name: 'head-box' }));
  expect((await call('PUT', '/filesystem/tmp/head/file.txt', { content: 'sixteen bytes!!\n' })).status).toBe(200);
  await exec(sandbox.socketPath, 'echo out; echo err >&2', { name: 'done' });
  sleeper = (await call('POST', '/process', { command: 'sleep 60', name: 'sleeper' })).json;
  uploadId = ((await call('POST', '/filesystem-multipart/initiate/tmp/head/big.bin', {})).json as { uploadId: string }).uploadId;
});

afterAll(async () => {
  for (const s of await runtime.list()) await runtime.remove(s.id);
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** Routes whose `{path}` is a folder, and the query each needs besides. */
const FOLDER_ROUTES: Record<string, string> = {
  '/filesystem/tree/{path}': '',
  '/filesystem-find/{path}': '',
  '/filesystem-search/{path}': '',
  '/filesystem-content-search/{path}': '?query=sixteen',
  '/watch/filesystem/{path}': '',
};

/** A GET row's path with its placeholders filled with things that exist in the sandbox (a pid's ports: a running one's). */
function filled(path: string): string {
  const folder = FOLDER_ROUTES[path];
  const file = folder === undefined ? 'tmp/head/file.txt' : 'tmp/head';
  const withValues = path.replace('{path}', file).replace('{process}', 'done').replace('{pid}', String(sleeper.pid)).replace('{uploadId}', uploadId);
  return withValues + (folder ?? '');
}

/** What a plain GET answers where it is not 200: the terminal takes only an upgrade. */
const GET_STATUS: Record<string, number> = { '/terminal/ws': 426 };
/** GETs that stream until the caller goes: their HEAD is checked on its own below. */
const ENDLESS = new Set(['/watch/filesystem/{path}']);

const getRows = AGENT_ROUTES.filter((route) => route.method === 'GET' && !ENDLESS.has(route.path));

test.each(getRows.map((route) => [`${route.method} ${route.path}`, route] as const))('HEAD %s: the GET\'s status and headers, no body', async (_name, route) => {
  const path = filled(route.path);
  const [get, head] = [await call('GET', path), await call('HEAD', path)];
  expect([path, get.status]).toEqual([path, GET_STATUS[route.path] ?? 200]);
  expect(head.status).toBe(get.status);
  expect(head.text).toBe('');
  expect(head.headers['content-type']).toBe(get.headers['content-type']);
  if (get.headers['content-length'] !== undefined) expect(head.headers['content-length']).toBe(String(Buffer.byteLength(get.text)));
});

test('HEAD of a file as bytes gives its length; HEAD of a missing file is the GET\'s 404', async () => {
  const head = await call('HEAD', '/filesystem/tmp/head/file.txt?download=true');
  expect([head.status, head.headers['content-type'], head.headers['content-length'], head.text]).toEqual([200, 'application/octet-stream', '16', '']);
  const missing = await call('HEAD', '/filesystem/tmp/head/nope');
  expect([missing.status, missing.text]).toEqual([404, '']);
  expect((await call('HEAD', '/network/process/1/monitor')).status).toBe(405);
});

test('HEAD of a running process\'s log stream answers with its headers and ends: nothing stays in flight', async () => {
  // Over a kept-alive connection, as the gateway's: a closed connection would end it anyway.
  const agent = new http.Agent({ keepAlive: true });
  const status = await new Promise<number | undefined>((resolve, reject) => {
    http
      .request({ socketPath: sandbox.socketPath, method: 'HEAD', path: '/process/sleeper/logs/stream', agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      })
      .on('error', reject)
      .end();
  });
  expect(status).toBe(200);
  // Only the activity request itself is in flight once the HEAD has ended.
  await until('the HEAD to end in the agent', async () => (await call('GET', '/internal/activity')).json.inflightRequests === 0, 10_000);
  expect((await call('GET', '/process/sleeper')).json.status).toBe('running');
  agent.destroy();
});

test('HEAD of a watch answers its headers and ends, with no watch left running', async () => {
  const head = await call('HEAD', filled('/watch/filesystem/{path}'));
  expect([head.status, head.text]).toEqual([200, '']);
  expect(head.headers['content-type']).toMatch(/ndjson|json|text/);
  const activity = (await call('GET', '/internal/activity')).json as { inflightRequests: number };
  expect(activity.inflightRequests).toBe(0);
});
