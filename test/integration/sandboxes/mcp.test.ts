import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { proxyRequest } from '../../../runtime/http-proxy';
import type { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import type { SandboxHandle } from '../../../runtime/sandbox-runtime';
import { exec, runtimeDataDir, sandboxSpec, testRuntime } from '../../helpers/sandbox-runtime';

// Real sandboxes on a busy 2-core machine: generous limits; no test asserts on time.
jest.setTimeout(30_000);

// The sandbox's /mcp endpoint through the official MCP client, over HTTP forwarded to the
// sandbox's socket as the gateway does.
const dataDir = runtimeDataDir('sandbox-mcp');
let runtime: BwrapRuntime;
let sandbox: SandboxHandle;
let forwarder: http.Server;
let client: Client;

beforeAll(async () => {
  runtime = testRuntime(dataDir);
  sandbox = await runtime.start(sandboxSpec());
  forwarder = http.createServer((req, res) =>
    proxyRequest(req, res, {
      upstream: { socketPath: sandbox.socketPath },
      path: req.url ?? '/',
      onUnreachable: (err) => res.writeHead(502).end(err.message),
    }),
  );
  await new Promise<void>((resolve) => forwarder.listen(0, '127.0.0.1', resolve));
  const url = new URL(`http://127.0.0.1:${(forwarder.address() as AddressInfo).port}/mcp`);
  client = new Client({ name: 'hangar-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
});

afterAll(async () => {
  await client?.close();
  await new Promise<void>((resolve) => forwarder.close(() => resolve()));
  for (const s of await runtime.list()) await runtime.remove(s.id);
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function text(result: Awaited<ReturnType<Client['callTool']>>): string {
  return (result.content as { type: string; text: string }[]).map((c) => c.text).join('');
}

test('lists the file and process tools', async () => {
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name).sort()).toEqual(
    ['files_delete', 'files_edit', 'files_list', 'files_read', 'files_write', 'process_execute', 'process_get', 'process_kill', 'process_list', 'process_logs', 'process_stop'].sort(),
  );
  expect(tools.find((t) => t.name === 'files_write')!.inputSchema).toMatchObject({ type: 'object', required: expect.arrayContaining(['path', 'content']) });
});

test('file tools: write, read, edit, list, delete', async () => {
  expect((await client.callTool({ name: 'files_write', arguments: { path: '/workspace/app/main.py', content: 'print("hello")\n' } })).isError).toBeFalsy();
  expect(text(await client.callTool({ name: 'files_read', arguments: { path: '/workspace/app/main.py' } }))).toBe('print("hello")\n');
  await client.callTool({ name: 'files_edit', arguments: { path: '/workspace/app/main.py', oldText: 'hello', newText: 'edited' } });
  expect((await exec(sandbox.socketPath, 'python3 /workspace/app/main.py')).stdout).toBe('edited\n');
  const listing = JSON.parse(text(await client.callTool({ name: 'files_list', arguments: { path: '/workspace' } })));
  expect(listing.subdirectories[0]).toMatchObject({ name: 'app', files: [expect.objectContaining({ name: 'main.py' })] });
  await client.callTool({ name: 'files_delete', arguments: { path: '/workspace/app', recursive: true } });
  const missing = await client.callTool({ name: 'files_read', arguments: { path: '/workspace/app/main.py' } });
  expect(missing.isError).toBe(true);
  expect(text(missing)).toMatch(/ENOENT|does not exist|no such file/i);
});

test('file tools refuse what the REST API refuses', async () => {
  const outside = await client.callTool({ name: 'files_write', arguments: { path: '/etc/evil', content: 'x' } });
  expect(outside.isError).toBe(true);
  expect(text(outside)).toMatch(/outside the writable folders/);
  const dotdot = await client.callTool({ name: 'files_read', arguments: { path: '/workspace/../etc/passwd' } });
  expect(dotdot.isError).toBe(true);
  expect(text(dotdot)).toMatch(/'\.\.'/);
  const ambiguous = await client.callTool({ name: 'files_write', arguments: { path: '/tmp/twice.txt', content: 'a a' } });
  expect(ambiguous.isError).toBeFalsy();
  expect((await client.callTool({ name: 'files_edit', arguments: { path: '/tmp/twice.txt', oldText: 'a', newText: 'b' } })).isError).toBe(true);
});

test('process tools: execute, list, get, logs, stop, kill', async () => {
  const ran = JSON.parse(text(await client.callTool({ name: 'process_execute', arguments: { command: 'echo from mcp; echo oops >&2' } })));
  expect(ran).toMatchObject({ status: 'completed', exitCode: 0, stdout: 'from mcp\n', stderr: 'oops\n' });

  const background = JSON.parse(text(await client.callTool({ name: 'process_execute', arguments: { command: 'echo started; sleep 100', name: 'bg', waitForCompletion: false } })));
  expect(background.status).toBe('running');
  const listed = JSON.parse(text(await client.callTool({ name: 'process_list', arguments: {} })));
  expect(listed.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['bg']));
  expect(JSON.parse(text(await client.callTool({ name: 'process_get', arguments: { identifier: String(background.pid) } }))).name).toBe('bg');
  for (let i = 0; i < 50; i++) {
    if (JSON.parse(text(await client.callTool({ name: 'process_logs', arguments: { identifier: 'bg' } }))).stdout === 'started\n') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(JSON.parse(text(await client.callTool({ name: 'process_logs', arguments: { identifier: 'bg' } }))).stdout).toBe('started\n');
  expect(JSON.parse(text(await client.callTool({ name: 'process_stop', arguments: { identifier: 'bg' } }))).status).toBe('stopped');

  await client.callTool({ name: 'process_execute', arguments: { command: 'sleep 100', name: 'victim', waitForCompletion: false } });
  expect(JSON.parse(text(await client.callTool({ name: 'process_kill', arguments: { identifier: 'victim' } }))).status).toBe('killed');
  const unknown = await client.callTool({ name: 'process_get', arguments: { identifier: 'nobody' } });
  expect(unknown.isError).toBe(true);
});

test('a second client gets its own session; requests without one are refused', async () => {
  const url = new URL(`http://127.0.0.1:${(forwarder.address() as AddressInfo).port}/mcp`);
  const other = new Client({ name: 'second', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(url);
  await other.connect(transport);
  expect(transport.sessionId).toBeDefined();
  expect((await other.listTools()).tools.length).toBe(11);
  await other.close();
  const bare = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
  expect(bare.status).toBe(400);
});
