import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { AgentError, AgentUnreachableError, SandboxAgentClient, waitForAgent } from '../../../runtime/agent-client';
import type { AgentConfig } from '../../../sandbox-agent/contract/agent-config';
import { createAgentServer } from '../../../sandbox-agent/server';

// The one client of the sandbox agent against the agent's own server (its real code, on a Unix
// socket as in a sandbox, without the sandbox around it), and against stand-ins for what the
// agent never answers on purpose: a 5xx, a body that is no JSON, no answer at all.

let folder: string;
let agent: http.Server;
let client: SandboxAgentClient;

function listen(server: http.Server, socketPath: string): Promise<void> {
  return new Promise((resolve) => server.listen(socketPath, resolve));
}

function close(server: http.Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A stand-in agent that answers every request with `answer`. */
async function standIn(name: string, answer: (res: http.ServerResponse) => void): Promise<{ client: SandboxAgentClient; server: http.Server }> {
  const socketPath = path.join(folder, `${name}.sock`);
  const server = http.createServer((_req, res) => answer(res));
  await listen(server, socketPath);
  return { client: new SandboxAgentClient(socketPath), server };
}

beforeAll(async () => {
  folder = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-client-'));
  const config: AgentConfig = {
    sandboxId: 'sb-client',
    sandboxName: 'client',
    workspaceId: 'ws',
    socketPath: path.join(folder, 'agent.sock'),
    eventLog: path.join(folder, 'events.log'),
    processEnv: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    defaultWorkingDir: folder,
    writableRoots: [folder],
    hiddenRoots: [],
  };
  agent = createAgentServer(() => config);
  await listen(agent, config.socketPath);
  client = new SandboxAgentClient(config.socketPath);
});

afterAll(async () => {
  await close(agent);
  fs.rmSync(folder, { recursive: true, force: true });
});

test('the contract types what the agent answers: health, a process started, found, listening, killed', async () => {
  expect(await client.health()).toEqual({ status: 'ok', version: expect.any(String), startedAt: expect.any(String), uptimeSeconds: expect.any(Number) });
  const done = await client.startProcess({ command: 'echo out; echo err >&2; exit 3', name: 'short', waitForCompletion: true });
  expect(done).toMatchObject({ name: 'short', status: 'failed', exitCode: 3, stdout: 'out\n', stderr: 'err\n', restartCount: 0 });
  expect(await client.findProcess('short')).toMatchObject({ pid: done.pid, status: 'failed' });
  expect(await client.findProcess(done.pid)).toMatchObject({ name: 'short' });

  const sleeper = await client.startProcess({ command: 'sleep 30', name: 'sleeper' });
  expect(sleeper.status).toBe('running');
  expect(await client.processPorts(sleeper.pid)).toEqual({ pid: sleeper.pid, ports: [] });
  expect(await client.killProcess('sleeper')).toMatchObject({ name: 'sleeper', status: 'killed' });
  expect(await client.activity()).toEqual({ inflightRequests: 0, lastRequestAt: expect.any(String), keepAliveProcesses: 0 });
});

test('a 4xx answer throws AgentError with its status and the contract\'s {error} message', async () => {
  const refused = await client.startProcess({ command: ' ' }).catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(AgentError);
  expect(refused).toMatchObject({ status: 400, reason: "'command' is required" });
  expect((refused as Error).message).toBe("the sandbox API answered 400 to POST /process: 'command' is required");

  const missing = await client.killProcess('no-such').catch((err: unknown) => err);
  expect(missing).toMatchObject({ status: 404, reason: "process 'no-such' not found" });
  // A name is one path segment, however it is spelt.
  expect(await client.findProcess('a/../b')).toBeUndefined();

  // The sandbox was used: it no longer takes a new configuration.
  expect(await client.reload().catch((err: unknown) => err)).toMatchObject({ status: 409, reason: expect.stringMatching(/in use/) });
});

test('a 5xx answer throws AgentError too, with the {error} message or, lacking it, the text', async () => {
  const failing = await standIn('failing', (res) => {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'internal error: disk on fire' }));
  });
  const proxyText = await standIn('text', (res) => {
    res.writeHead(502, { 'content-type': 'text/plain' });
    res.end('bad gateway');
  });
  try {
    expect(await failing.client.findProcess('x').catch((err: unknown) => err)).toMatchObject({ status: 500, reason: 'internal error: disk on fire' });
    expect(await proxyText.client.health().catch((err: unknown) => err)).toMatchObject({ status: 502, reason: 'bad gateway' });
  } finally {
    await close(failing.server);
    await close(proxyText.server);
  }
});

test('a 200 that is no JSON is an error, not an empty answer', async () => {
  const garbled = await standIn('garbled', (res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('<html>');
  });
  try {
    await expect(garbled.client.health()).rejects.toThrow('the sandbox API answered GET /health with no JSON: <html>');
  } finally {
    await close(garbled.server);
  }
});

test('a missing socket throws AgentUnreachableError naming it; waitForAgent gives up with why', async () => {
  const socketPath = path.join(folder, 'gone.sock');
  const failed = await new SandboxAgentClient(socketPath).health().catch((err: unknown) => err);
  expect(failed).toBeInstanceOf(AgentUnreachableError);
  expect((failed as Error).message).toBe(`the sandbox API is not reachable at ${socketPath}: ENOENT`);
  await expect(waitForAgent(socketPath, Date.now(), () => undefined)).rejects.toThrow('the sandbox API did not become ready: the API socket never appeared');
  await expect(waitForAgent(socketPath, Date.now() + 60_000, () => 'the sandbox exited')).rejects.toThrow('the sandbox exited');
});

test('an agent that does not answer: the call gives up after its timeout, or when its signal aborts', async () => {
  const silent = await standIn('silent', () => undefined);
  try {
    await expect(silent.client.startProcess({ command: 'true' }, { timeoutMs: 100 })).rejects.toThrow('the sandbox API did not answer POST /process within 100 ms');
    const abort = new AbortController();
    const call = silent.client.startProcess({ command: 'true' }, { signal: abort.signal });
    abort.abort();
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
  } finally {
    await close(silent.server);
  }
});
