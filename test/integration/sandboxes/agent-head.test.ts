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
  uploadId = (await call('POST', '/filesystem-multipart/initiate/tmp/head/big.bin', {})).json.uploadId;
});

afterAll(async () => {
  for (const s of await runtime.list()) await runtime.remove(s.id);
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** The routes that take a folder, not a file: their HEAD answers once the folder is known to be one. */
const FOLDER_ROUTES = ['/filesystem/tree/', '/filesystem-find/', '/filesystem-search/', '/filesystem-content-search/', '/watch/filesystem/'];
/** The routes whose HEAD neither searches nor watches, so it cannot know the length the GET's body has. */
const HEAD_WITHOUT_WORK = ['/filesystem-find/', '/filesystem-search/', '/filesystem-content-search/', '/watch/filesystem/'];

/** A GET row's path with its placeholders filled with things that exist in the sandbox (a pid's ports: a running one's). */
function filled(path: string): string {
  const file = FOLDER_ROUTES.some((prefix) => path.startsWith(prefix)) ? 'tmp/head' : 'tmp/head/file.txt';
  const query = path.startsWith('/filesystem-content-search/') ? '?query=sixteen' : '';
  return `${path.replace('{path}', file).replace('{process}', 'done').replace('{pid}', String(sleeper.pid)).replace('{uploadId}', uploadId)}${query}`;
}

/** A GET whose answer never ends by itself (a watch): its status and headers, then the caller leaves. */
function headersOfEndless(path: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request({ socketPath: sandbox.socketPath, method: 'GET', path }, (res) => {
      resolve({ status: res.statusCode ?? 0, headers: res.headers, text: '' });
      request.destroy();
    });
    request.on('error', reject).end();
  });
}

const getRows = AGENT_ROUTES.filter((route) => route.method === 'GET');
/** What a plain GET answers when it is not a 200: the terminal wants an upgrade. */
const GET_STATUS: Record<string, number> = { '/terminal/ws': 426 };

test.each(getRows.map((route) => [`${route.method} ${route.path}`, route] as const))('HEAD %s: the GET\'s status and headers, no body', async (_name, route) => {
  const path = filled(route.path);
  const get = route.path.startsWith('/watch/') ? await headersOfEndless(path) : await call('GET', path);
  const head = await call('HEAD', path);
  expect([path, get.status]).toEqual([path, GET_STATUS[route.path] ?? 200]);
  expect(head.status).toBe(get.status);
  expect(head.text).toBe('');
  expect(head.headers['content-type']).toBe(get.headers['content-type']);
  // RFC 9110 lets a HEAD leave out what only the body tells: these answer without doing the GET's work.
  if (HEAD_WITHOUT_WORK.some((prefix) => route.path.startsWith(prefix))) expect(head.headers['content-length']).toBeUndefined();
  else if (get.headers['content-length'] !== undefined) expect(head.headers['content-length']).toBe(String(Buffer.byteLength(get.text)));
});

test('HEAD of a file as bytes gives its length; HEAD of a missing file is the GET\'s 404', async () => {
  const head = await call('HEAD', '/filesystem/tmp/head/file.txt?download=true');
  expect([head.status, head.headers['content-type'], head.headers['content-length'], head.text]).toEqual([200, 'application/octet-stream', '16', '']);
  const missing = await call('HEAD', '/filesystem/tmp/head/nope');
  expect([missing.status, missing.text]).toEqual([404, '']);
  expect((await call('HEAD', '/network/process/1/monitor')).status).toBe(405);
});

test('HEAD of a file as bytes does not read it: a FIFO that no one writes to answers its headers', async () => {
  // Reading it would wait for a writer forever: the HEAD only ends if the bytes are left alone.
  expect((await exec(sandbox.socketPath, 'mkfifo /tmp/head/pipe')).exitCode).toBe(0);
  const head = await call('HEAD', '/filesystem/tmp/head/pipe?download=true');
  expect([head.status, head.headers['content-type'], head.headers['content-length'], head.text]).toEqual([200, 'application/octet-stream', '0', '']);
}, 20_000);

/** A HEAD over a kept-alive connection, as the gateway's (a closed connection would end it anyway): its status once it has ended. */
function headKeptAlive(path: string, agent: http.Agent): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    http
      .request({ socketPath: sandbox.socketPath, method: 'HEAD', path, agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      })
      .on('error', reject)
      .end();
  });
}

test.each([
  ['a running process\'s log stream', '/process/sleeper/logs/stream'],
  ['a watch (recursive)', '/watch/filesystem/tmp/head/**'],
])('HEAD of %s answers with its headers and ends: nothing stays in flight', async (_name, path) => {
  const agent = new http.Agent({ keepAlive: true });
  expect(await headKeptAlive(path, agent)).toBe(200);
  // Only the activity request itself is in flight once the HEAD has ended.
  await until('the HEAD to end in the agent', async () => (await call('GET', '/internal/activity')).json.inflightRequests === 0, 10_000);
  expect((await call('GET', '/process/sleeper')).json.status).toBe('running');
  agent.destroy();
});
