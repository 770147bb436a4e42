import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { once } from 'node:events';
import WebSocket from 'ws';
import type { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import type { SandboxHandle } from '../../../runtime/sandbox-runtime';
import { parsePortEvent } from '../../../sandbox-agent/contract/port-events';
import { callSandbox, exec, runtimeDataDir, sandboxSpec, testRuntime } from '../../helpers/sandbox-runtime';

// Real sandboxes on a busy 2-core machine: generous limits; no test asserts on time.
jest.setTimeout(30_000);

// The sandbox API (filesystem, processes, network) against a real sandbox, over its socket.
const dataDir = runtimeDataDir('sandbox-api');
let runtime: BwrapRuntime;
let sandbox: SandboxHandle;
const sandboxName = 'api-test-box';
const call = (method: string, url: string, body?: unknown, headers?: Record<string, string>) => callSandbox(sandbox.socketPath, method, url, body, headers);

beforeAll(async () => {
  runtime = testRuntime(dataDir);
  sandbox = await runtime.start(sandboxSpec({ name: sandboxName }));
});

afterAll(async () => {
  for (const s of await runtime.list()) await runtime.remove(s.id);
  fs.rmSync(dataDir, { recursive: true, force: true });
});

test('health and the API base', async () => {
  const health = await call('GET', '/health');
  expect(health.status).toBe(200);
  expect(health.json).toEqual({ status: 'ok', version: expect.any(String), startedAt: expect.any(String), uptimeSeconds: expect.any(Number) });
  expect((await call('GET', '/')).json).toMatchObject({ name: 'hangar-sandbox-api', sandbox: sandboxName });
  expect((await call('GET', '/nope')).json).toEqual({ error: expect.stringMatching(/no such endpoint/) });
});

describe('filesystem', () => {
  test('write, read, describe and delete a file', async () => {
    const put = await call('PUT', '/filesystem/workspace/docs/readme.md', { content: '# hello\n', permissions: '0600' });
    expect(put.status).toBe(200);
    expect(put.json).toEqual({ path: '/workspace/docs/readme.md', message: expect.any(String) });
    const file = await call('GET', '/filesystem/workspace/docs/readme.md');
    expect(file.json).toEqual({
      path: '/workspace/docs/readme.md',
      name: 'readme.md',
      permissions: '600',
      size: 8,
      lastModified: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      owner: 'user',
      group: 'user',
      content: '# hello\n',
    });
    expect((await call('DELETE', '/filesystem/workspace/docs/readme.md')).status).toBe(200);
    expect((await call('GET', '/filesystem/workspace/docs/readme.md')).status).toBe(404);
    expect((await call('DELETE', '/filesystem/workspace/docs/readme.md')).status).toBe(404);
  });

  test('a directory reads as a Directory; the tree recurses, bounded by depth and entry count', async () => {
    for (const file of ['a/1.txt', 'a/b/2.txt', 'a/b/c/3.txt', 'a/b/c/d/4.txt']) {
      expect((await call('PUT', `/filesystem/workspace/tree/${file}`, { content: file })).status).toBe(200);
    }
    expect((await call('PUT', '/filesystem/workspace/tree/empty', { isDirectory: true })).json.message).toBe('Directory created');

    const listing = await call('GET', '/filesystem/workspace/tree');
    expect(listing.json).toEqual({ path: '/workspace/tree', name: 'tree', files: [], subdirectories: [expect.objectContaining({ name: 'a', files: [], subdirectories: [] }), expect.objectContaining({ name: 'empty' })] });

    const full = (await call('GET', '/filesystem/tree/workspace/tree')).json;
    expect(full.truncated).toBe(false);
    const d = full.subdirectories[0].subdirectories[0].subdirectories[0].subdirectories[0];
    expect(d).toMatchObject({ path: '/workspace/tree/a/b/c/d', files: [expect.objectContaining({ name: '4.txt', size: 13, permissions: '644' })] });

    const shallow = (await call('GET', '/filesystem/tree/workspace/tree?depth=2')).json;
    expect(shallow.truncated).toBe(true);
    expect(shallow.subdirectories[0].subdirectories[0]).toMatchObject({ name: 'b', files: [], subdirectories: [] });

    const capped = (await call('GET', '/filesystem/tree/workspace/tree?maxEntries=3')).json;
    expect(capped.truncated).toBe(true);
    expect((await call('GET', '/filesystem/tree/workspace/tree?depth=0')).status).toBe(400);
    expect((await call('GET', '/filesystem/tree/workspace/tree/a/1.txt')).json).toEqual({ error: 'path is not a directory' });
  });

  test('a non-empty directory is deleted only with recursive=true', async () => {
    await call('PUT', '/filesystem/workspace/full/x.txt', { content: 'x' });
    const refused = await call('DELETE', '/filesystem/workspace/full');
    expect(refused.status).toBe(400);
    expect(refused.json.error).toMatch(/recursive=true/);
    expect((await call('DELETE', '/filesystem/workspace/full?recursive=true')).status).toBe(200);
    expect((await call('GET', '/filesystem/workspace/full')).status).toBe(404);
  });

  test('binary content: multipart upload, raw upload and download round-trip byte for byte', async () => {
    // Random bytes with near-delimiters inside (a delimiter is CRLF + '--' + boundary), larger than one socket chunk.
    const bytes = Buffer.concat([randomBytes(300_000), Buffer.from('\r\n--X-BOUNDAR\r\n\r\n!--X-BOUNDARY'), randomBytes(70_000)]);
    const boundary = 'X-BOUNDARY';
    const multipart = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="permissions"\r\n\r\n0640\r\n`),
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="blob.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
      bytes,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const upload = await call('PUT', '/filesystem/home/user/blob.bin', multipart, { 'content-type': `multipart/form-data; boundary=${boundary}` });
    expect(upload.status).toBe(200);
    const downloaded = await download('/filesystem/home/user/blob.bin?download=true');
    expect(downloaded.equals(bytes)).toBe(true);
    expect((await call('GET', '/filesystem/home/user/blob.bin')).json).toMatchObject({ size: bytes.length, permissions: '640' });

    const raw = await call('PUT', '/filesystem/tmp/raw.bin', bytes, { 'content-type': 'application/octet-stream' });
    expect(raw.status).toBe(200);
    expect((await download('/filesystem/tmp/raw.bin', { accept: 'application/octet-stream' })).equals(bytes)).toBe(true);
    expect((await call('PUT', '/filesystem/home/user/no-file', Buffer.from(`--${boundary}--\r\n`), { 'content-type': `multipart/form-data; boundary=${boundary}` })).status).toBe(400);
  });

  test('bad input names the problem', async () => {
    expect((await call('PUT', '/filesystem/workspace/x', { content: 5 })).json).toEqual({ error: "'content' must be a string" });
    expect((await call('PUT', '/filesystem/workspace/x', { content: 'x', permissions: 'rwx' })).json.error).toMatch(/'permissions'/);
    expect((await call('PUT', '/filesystem/workspace/x', '{not json', { 'content-type': 'application/json' })).json).toEqual({ error: 'the body is not valid JSON' });
  });

  function download(url: string, headers: Record<string, string> = {}): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      http
        .get({ socketPath: sandbox.socketPath, path: url, headers }, (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (c: Buffer) => chunks.push(c));
          response.on('end', () => (response.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`status ${response.statusCode}`))));
        })
        .on('error', reject);
    });
  }
});

describe('terminal', () => {
  test('an open terminal is a request in flight (no standby under it); an upgrade elsewhere is a 404 in the API\'s error shape', async () => {
    const terminal = new WebSocket(`ws+unix://${sandbox.socketPath}:/terminal/ws`);
    await once(terminal, 'open');
    expect((await call('GET', '/internal/activity')).json.inflightRequests).toBe(1);
    terminal.close();
    await once(terminal, 'close');
    await eventuallyIdle();

    const elsewhere = new WebSocket(`ws+unix://${sandbox.socketPath}:/filesystem/tmp`);
    const [, response] = (await once(elsewhere, 'unexpected-response')) as [unknown, http.IncomingMessage];
    expect(response.statusCode).toBe(404);
    let body = '';
    for await (const chunk of response) body += String(chunk);
    expect(JSON.parse(body)).toEqual({ error: expect.stringMatching(/no WebSocket endpoint/) });
  });
});

/** The agent counts a closed connection out once its socket closed on its side too. */
async function eventuallyIdle(): Promise<void> {
  for (let i = 0; i < 100 && (await call('GET', '/internal/activity')).json.inflightRequests !== 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  expect((await call('GET', '/internal/activity')).json.inflightRequests).toBe(0);
}

describe('processes', () => {
  test('a running keepAlive process keeps the sandbox in use (the host reads it in the activity); timeout 0 sets no limit', async () => {
    expect((await call('GET', '/internal/activity')).json.keepAliveProcesses).toBe(0);
    const kept = await call('POST', '/process', { command: 'sleep 60', name: 'kept-alive', keepAlive: true });
    expect(kept.json).toMatchObject({ status: 'running', keepAlive: true });
    expect((await call('GET', '/internal/activity')).json).toMatchObject({ inflightRequests: 0, keepAliveProcesses: 1 });
    await call('POST', '/process/kept-alive/kill');
    expect((await call('GET', '/internal/activity')).json.keepAliveProcesses).toBe(0);
    expect((await call('POST', '/process', { command: 'true', timeout: 0, waitForCompletion: true })).json).toMatchObject({ status: 'completed', exitCode: 0 });
  });

  test('POST /process waits for completion and returns the whole process object', async () => {
    const reply = await call('POST', '/process', { command: 'echo out; echo err >&2; exit 3', name: 'shape', waitForCompletion: true });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({
      pid: expect.any(Number),
      name: 'shape',
      command: 'echo out; echo err >&2; exit 3',
      status: 'failed',
      startedAt: expect.any(String),
      completedAt: expect.any(String),
      exitCode: 3,
      workingDir: '/home/user',
      logs: expect.stringMatching(/out\n|err\n/),
      stdout: 'out\n',
      stderr: 'err\n',
      restartOnFailure: false,
      maxRestarts: 0,
      restartCount: 0,
      keepAlive: false,
      stdin: false,
    });
    expect((await call('GET', '/process/shape')).json.exitCode).toBe(3);
    expect((await call('GET', `/process/${reply.json.pid}`)).json.name).toBe('shape');
    expect((await call('GET', '/process/shape/logs')).json).toEqual({ stdout: 'out\n', stderr: 'err\n', logs: expect.any(String) });
    expect((await call('GET', '/process')).json.some((p: { name: string }) => p.name === 'shape')).toBe(true);
    expect((await call('GET', '/process/nobody-has-this-name')).status).toBe(404);
  });

  test('input is checked field by field', async () => {
    expect((await call('POST', '/process', {})).json).toEqual({ error: "'command' is required" });
    expect((await call('POST', '/process', { command: 'true', timeout: '5' })).json.error).toMatch(/'timeout'/);
    expect((await call('POST', '/process', { command: 'true', env: { A: 1 } })).json.error).toMatch(/'env.A'/);
    expect((await call('POST', '/process', { command: 'true', workingDir: '/nowhere' })).json.error).toMatch(/'workingDir'/);
    expect((await call('POST', '/process', { command: 'true', name: '123' })).status).toBe(400);
    expect((await call('POST', '/process')).status).toBe(400);
  });

  test('a running name is unique; it is free again once that process ended', async () => {
    expect((await call('POST', '/process', { command: 'sleep 60', name: 'single' })).status).toBe(200);
    const second = await call('POST', '/process', { command: 'sleep 60', name: 'single' });
    expect(second.status).toBe(400);
    expect(second.json.error).toMatch(/already running/);
    expect((await call('DELETE', '/process/single/kill')).json.status).toBe('killed');
    expect((await call('POST', '/process', { command: 'true', name: 'single', waitForCompletion: true })).json.status).toBe('completed');
  });

  test('the timeout is in seconds and kills the process', async () => {
    const reply = await call('POST', '/process', { command: 'sleep 30', timeout: 1, waitForCompletion: true });
    expect(reply.json).toMatchObject({ status: 'killed', exitCode: 137 });
  });

  test('kill ends the whole process group and every descendant', async () => {
    const started = await call('POST', '/process', { command: 'sleep 1011 & setsid sleep 1012 & sleep 1013', name: 'family' });
    expect(started.status).toBe(200);
    const alive = async () =>
      (await exec(sandbox.socketPath, 'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline; echo; done')).stdout.match(/^sleep 101[123] $/gm)?.length ?? 0;
    for (let i = 0; i < 100 && (await alive()) < 3; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await alive()).toBe(3);
    const killed = await call('DELETE', '/process/family/kill');
    expect(killed.json.status).toBe('killed');
    expect(await alive()).toBe(0);
  });

  test('stop is graceful: the process can clean up on SIGTERM', async () => {
    await call('POST', '/process', { command: "trap 'echo cleaned up; exit 0' TERM; while true; do sleep 0.05; done", name: 'graceful' });
    await new Promise((r) => setTimeout(r, 100));
    const stopped = await call('DELETE', '/process/graceful');
    expect(stopped.json).toMatchObject({ status: 'stopped', stdout: 'cleaned up\n' });
  });

  test('restartOnFailure restarts up to maxRestarts times', async () => {
    const reply = await call('POST', '/process', { command: 'echo attempt; exit 4', restartOnFailure: true, maxRestarts: 2, waitForCompletion: true });
    expect(reply.json).toMatchObject({ status: 'failed', exitCode: 4, restartOnFailure: true, maxRestarts: 2, restartCount: 2, stdout: 'attempt\nattempt\nattempt\n' });
  });

  test('the log stream replays what came before it, then follows, losing and repeating nothing', async () => {
    const lines = 3000;
    const command = `i=1; while [ $i -le ${lines} ]; do echo "out $i"; echo "err $i" >&2; if [ $((i % 500)) -eq 0 ]; then sleep 0.05; fi; i=$((i+1)); done; printf 'no newline at the end'`;
    const started = await call('POST', '/process', { command, name: 'chatty' });
    // Join late, while it is writing; and once more after it finished.
    await new Promise((r) => setTimeout(r, 30));
    const live = await call('GET', '/process/chatty/logs/stream');
    const late = await call('GET', `/process/${started.json.pid}/logs/stream`);
    for (const stream of [live, late]) {
      expect(stream.status).toBe(200);
      expect(stream.headers['content-type']).toMatch(/^text\/plain/);
      const received = stream.text.split('\n').filter(Boolean);
      const out = received.filter((l) => l.startsWith('stdout:')).map((l) => l.slice(7));
      const err = received.filter((l) => l.startsWith('stderr:')).map((l) => l.slice(7));
      expect(out).toEqual([...Array.from({ length: lines }, (_, i) => `out ${i + 1}`), 'no newline at the end']);
      expect(err).toEqual(Array.from({ length: lines }, (_, i) => `err ${i + 1}`));
    }
  });

  test('waitForPorts returns once the server listens; its ports are listed', async () => {
    const reply = await call('POST', '/process', { command: 'exec python3 -m http.server 8090 --bind 127.0.0.1', name: 'web', waitForPorts: [8090] });
    expect(reply.json.status).toBe('running');
    const ports = await call('GET', `/network/process/${reply.json.pid}/ports`);
    expect(ports.json).toEqual({ pid: reply.json.pid, ports: [{ port: 8090, protocol: 'tcp', localAddr: '127.0.0.1', state: 'LISTEN' }] });
    await call('DELETE', '/process/web/kill');
  });
});

describe('port monitor', () => {
  test.each([
    ['abc', { callback: 'http://127.0.0.1:1/cb' }, 400],
    ['0', { callback: 'http://127.0.0.1:1/cb' }, 400],
    ['-5', { callback: 'http://127.0.0.1:1/cb' }, 400],
    ['12x', { callback: 'http://127.0.0.1:1/cb' }, 400],
    ['99999999999', { callback: 'http://127.0.0.1:1/cb' }, 400],
    ['2', undefined, 400],
    ['2', {}, 400],
    ['2', { callback: 'not a url' }, 400],
    ['2', { callback: 'ftp://example.com/x' }, 400],
    ['2', { callback: 42 }, 400],
    ['4000000', { callback: 'http://127.0.0.1:1/cb' }, 422],
  ])('POST /network/process/%s/monitor with %j -> %d', async (pid, body, status) => {
    const reply = await call('POST', `/network/process/${pid}/monitor`, body);
    expect(reply.status).toBe(status);
    expect(reply.json).toEqual({ error: expect.any(String) });
  });

  test('a finished process is not live: 422', async () => {
    const done = await call('POST', '/process', { command: 'true', waitForCompletion: true });
    expect((await call('POST', `/network/process/${done.json.pid}/monitor`, { callback: 'http://127.0.0.1:1/cb' })).status).toBe(422);
  });

  test('every new listening port of the process and its descendants becomes an event in the log', async () => {
    // A shell that later starts two servers as its children.
    const parent = await call('POST', '/process', {
      command: 'sleep 0.3; python3 -m http.server 8101 --bind 127.0.0.1 & sleep 0.6; python3 -m http.server 8102 --bind ::1 & wait',
      name: 'servers',
    });
    const callback = 'http://127.0.0.1:9/port-callback';
    const started = await call('POST', `/network/process/${parent.json.pid}/monitor`, { callback });
    expect(started.status).toBe(200);
    expect(started.json).toEqual({ pid: parent.json.pid, message: 'Port monitoring started' });

    const eventLog = runtime.layout(sandbox.id).eventLog;
    const events = () => (fs.existsSync(eventLog) ? fs.readFileSync(eventLog, 'utf8').split('\n').filter(Boolean).map((line) => parsePortEvent(line)) : []);
    for (let i = 0; i < 200 && events().length < 2; i++) await new Promise((r) => setTimeout(r, 25));
    const found = events();
    expect(found).toEqual([
      { key: expect.any(String), callback, pid: parent.json.pid, port: 8101, sandbox: sandboxName, detectedAt: expect.any(String) },
      { key: expect.any(String), callback, pid: parent.json.pid, port: 8102, sandbox: sandboxName, detectedAt: expect.any(String) },
    ]);
    expect(found[0]!.key).not.toBe(found[1]!.key);

    expect((await call('DELETE', `/network/process/${parent.json.pid}/monitor`)).json).toEqual({ pid: parent.json.pid, message: 'Port monitoring stopped' });
    expect((await call('DELETE', `/network/process/${parent.json.pid}/monitor`)).status).toBe(404);
    await call('DELETE', '/process/servers/kill');
  });
});
