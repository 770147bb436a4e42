import fs from 'node:fs';
import WebSocket from 'ws';
import type { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import { SandboxNotFoundError, type SandboxHandle } from '../../../runtime/sandbox-runtime';
import { callSandbox, exec, runtimeDataDir, sandboxSpec, testRuntime } from '../../helpers/sandbox-runtime';

// A sandbox's envs updated on the node (runtime.updateEnvs), also while it is in standby (frozen):
// the processes it starts afterwards see them, the ones running keep theirs, nothing restarts.
jest.setTimeout(60_000);

const dataDir = runtimeDataDir('env-update');
let runtime: BwrapRuntime;
let sandbox: SandboxHandle;

beforeAll(async () => {
  runtime = testRuntime(dataDir);
  sandbox = await runtime.start(sandboxSpec({ name: 'env-box', envs: [{ name: 'GREETING', value: 'hello' }] }));
});

afterAll(async () => {
  for (const s of await runtime.list()) await runtime.remove(s.id);
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const greeting = async () => (await exec(sandbox.socketPath, 'printf %s "$GREETING"')).stdout;

test('envs updated while frozen reach the processes started after the thaw; a running one keeps its own', async () => {
  expect(await greeting()).toBe('hello');
  const keeper = (await callSandbox(sandbox.socketPath, 'POST', '/process', { command: 'sleep 600', name: 'keeper' })).json as { pid: number };

  await runtime.freeze(sandbox.id);
  await runtime.updateEnvs(sandbox.id, [{ name: 'GREETING', value: 'updated' }]);
  await runtime.thaw(sandbox.id);

  expect(await greeting()).toBe('updated');
  const kept = await exec(sandbox.socketPath, `tr '\\0' '\\n' < /proc/${keeper.pid}/environ | grep '^GREETING='`);
  expect(kept.stdout.trim()).toBe('GREETING=hello');
  expect((await callSandbox(sandbox.socketPath, 'GET', '/process/keeper')).json).toMatchObject({ pid: keeper.pid, status: 'running' });
});

/** What a terminal of the sandbox prints for `command`, read until `until` shows in its output. */
function inTerminal(command: string, until: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`ws+unix://${sandbox.socketPath}:/terminal/ws`);
    let output = '';
    socket.on('open', () => socket.send(JSON.stringify({ type: 'input', data: `${command}\r` })));
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as { type: string; data: string };
      if (message.type === 'output') output += message.data;
      if (until.test(output)) {
        socket.close();
        resolve(output);
      }
    });
    socket.on('error', reject);
  });
}

test('a terminal opened after an update starts its shell with the updated envs, as processes do', async () => {
  await runtime.updateEnvs(sandbox.id, [{ name: 'GREETING', value: 'for-terminals' }]);
  expect(await greeting()).toBe('for-terminals');
  // The marker is printed by the command, so the echo of the typed line cannot match it.
  const output = await inTerminal('echo "[$GREETING]"', /\[[a-z-]*\]\r?\n/);
  expect(output).toMatch(/\[for-terminals\]/);
});

test('a sandbox the node does not have is named in the error', async () => {
  await expect(runtime.updateEnvs('t-missing-1', [])).rejects.toBeInstanceOf(SandboxNotFoundError);
});
