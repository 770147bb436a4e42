import { SandboxInstance } from '@blaxel/core';
import fc from 'fast-check';
import { once } from 'node:events';
import WebSocket from 'ws';
import { unique } from '../../helpers/platform';
import { startReferenceSdkPlatform, type ReferenceSdkPlatform } from '../../helpers/reference-sdk';
import { eventually } from '../../helpers/workers';

// Streamed execution driven by the reference SDK (`process.exec` with onLog/onStdout/onStderr and
// waitForCompletion), unchanged but for header names and base URLs (test/helpers/reference-sdk.ts).
// Real sandboxes on a busy 2-core machine: generous limits; no test asserts on time.
jest.setTimeout(180_000);

let platform: ReferenceSdkPlatform;
const name = unique('sdkproc');

beforeAll(async () => {
  platform = await startReferenceSdkPlatform('sdk-proc');
  await SandboxInstance.create({ metadata: { name }, spec: { runtime: { image: 'hangar/base:latest', memory: 256 } } });
}, 120_000);

afterAll(() => platform.stop(), 60_000);

const deployed = () => eventually(`${name} DEPLOYED`, async () => {
  const sandbox = await SandboxInstance.get(name);
  if (sandbox.status === 'FAILED') throw new Error(`${name} FAILED`);
  return sandbox.status === 'DEPLOYED' ? sandbox : undefined;
}, 60_000);

/** What the SDK's callbacks were given, in the order it called them. */
function recorder() {
  const seen = { log: [] as string[], stdout: [] as string[], stderr: [] as string[] };
  const callbacks = {
    onLog: (line: string) => seen.log.push(line),
    onStdout: (line: string) => seen.stdout.push(line),
    onStderr: (line: string) => seen.stderr.push(line),
  };
  return { seen, callbacks };
}

describe('process.exec with onLog and waitForCompletion', () => {
  test('lines arrive while the command still runs, each once and on its stream, then the final record', async () => {
    const sandbox = await deployed();
    const { seen, callbacks } = recorder();
    let firstLine!: () => void;
    const first = new Promise<string>((resolve) => (firstLine = () => resolve('line received')));
    // The command goes on only once the file exists, and the test writes it only after the first line came.
    const command = 'echo started; i=0; while [ ! -e /tmp/go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo after-go; echo to-stderr >&2; exit 4';
    const running = sandbox.process.exec({
      name: 'gated',
      command,
      waitForCompletion: true,
      ...callbacks,
      onLog: (line: string) => {
        callbacks.onLog(line);
        firstLine();
      },
    });
    expect(await Promise.race([first, running.then(() => 'command ended first')])).toBe('line received');
    expect(seen.log).toEqual(['started\n']);

    await sandbox.fs.write('/tmp/go', '');
    const result = await running;
    expect(result).toMatchObject({ name: 'gated', command, status: 'failed', exitCode: 4, stdout: 'started\nafter-go\n', stderr: 'to-stderr\n' });
    expect(seen.stdout).toEqual(['started\n', 'after-go\n']);
    expect(seen.stderr).toEqual(['to-stderr\n']);
    expect([...seen.log].sort()).toEqual(['after-go\n', 'started\n', 'to-stderr\n']);
    expect(await sandbox.process.logs('gated', 'stdout')).toBe('started\nafter-go\n');
    expect(await sandbox.process.logs('gated', 'stderr')).toBe('to-stderr\n');
    expect(await sandbox.process.get('gated')).toMatchObject({ status: 'failed', exitCode: 4 });
  });

  /** One write of the generated command: some text (maybe a whole line, maybe a piece) to a stream, maybe after a pause. */
  const write = fc.record({
    stream: fc.constantFrom('stdout' as const, 'stderr' as const),
    text: fc.stringMatching(/^[a-z0-9 -]{0,8}$/),
    newline: fc.boolean(),
    pause: fc.boolean(),
  });

  test('whatever the interleaving of the two streams, every line reaches the callbacks, the record and logs exactly once', async () => {
    const sandbox = await deployed();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(write, { minLength: 1, maxLength: 14 }), async (writes) => {
        const expected = { stdout: '', stderr: '' };
        const steps = writes.map(({ stream, text, newline, pause }) => {
          expected[stream] += text + (newline ? '\n' : '');
          return `${pause ? 'sleep 0.02; ' : ''}printf '${newline ? '%s\\n' : '%s'}' '${text}'${stream === 'stderr' ? ' >&2' : ''}`;
        });
        const { seen, callbacks } = recorder();
        const processName = `mix-${run++}`;
        const result = await sandbox.process.exec({ name: processName, command: steps.join('; '), waitForCompletion: true, ...callbacks });

        for (const stream of ['stdout', 'stderr'] as const) {
          // Each event is one line with its newline; only a stream's last may lack it.
          expect(seen[stream].join('')).toBe(expected[stream]);
          seen[stream].slice(0, -1).forEach((line) => expect(line).toMatch(/^[^\n]*\n$/));
          expect(seen[stream].at(-1) ?? '').toMatch(/^[^\n]*\n?$/);
          expect(result[stream]).toBe(expected[stream]);
          expect(await sandbox.process.logs(processName, stream)).toBe(expected[stream]);
        }
        expect([...seen.log].sort()).toEqual([...seen.stdout, ...seen.stderr].sort());
        expect((await sandbox.process.logs(processName, 'all')).length).toBe(expected.stdout.length + expected.stderr.length);
        expect(result).toMatchObject({ name: processName, status: 'completed', exitCode: 0 });
      }),
      { numRuns: 12 },
    );
  });

  test('a client that does not ask for a stream gets the plain JSON record; one that asks for NDJSON gets keepalives while nothing is printed', async () => {
    const sandbox = await deployed();
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${platform.tenant.admin.apiKey}`, 'x-service-workspace': platform.tenant.workspace };
    const plain = await fetch(`${sandbox.metadata.url}/process`, { method: 'POST', headers, body: JSON.stringify({ command: 'echo plain', waitForCompletion: true }) });
    expect(plain.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await plain.json()).toMatchObject({ status: 'completed', stdout: 'plain\n' });

    const streamed = await fetch(`${sandbox.metadata.url}/process`, {
      method: 'POST',
      headers: { ...headers, accept: 'application/x-ndjson' },
      body: JSON.stringify({ name: 'quiet', command: 'sleep 7; printf late', waitForCompletion: true }),
    });
    expect(streamed.headers.get('content-type')).toBe('application/x-ndjson');
    const events = (await streamed.text()).trimEnd().split('\n').map((line) => JSON.parse(line) as { type: string; data?: string });
    // A keepalive (every 5 s) while the command is silent, none after the record.
    expect(events[0]).toEqual({ type: 'keepalive' });
    const said = events.filter((event) => event.type !== 'keepalive');
    expect(said.map((event) => event.type)).toEqual(['stdout', 'result']);
    expect(said[0]).toEqual({ type: 'stdout', data: 'late' });
    expect(events.at(-1)).toBe(said[1]);
    expect(JSON.parse(said[1].data!)).toMatchObject({ name: 'quiet', status: 'completed', exitCode: 0, stdout: 'late', keepAlive: false });
  });

  test('keepAlive is recorded on the process; a bad keepAlive or timeout is a 400 naming the field', async () => {
    const sandbox = await deployed();
    const started = await sandbox.process.exec({ name: 'kept', command: 'sleep 60', keepAlive: true });
    expect(started).toMatchObject({ name: 'kept', status: 'running', keepAlive: true });
    await sandbox.process.kill('kept');
    await expect(sandbox.process.exec({ command: 'true', keepAlive: 'yes' as unknown as boolean })).rejects.toThrow(/'keepAlive'/);
    await expect(sandbox.process.exec({ command: 'true', timeout: -1 })).rejects.toThrow(/'timeout'/);
  });
});

/** A terminal client over a real WebSocket: what the terminal showed so far, and a wait for some text to show up. */
async function openTerminal(url: string, headers: Record<string, string>) {
  const socket = new WebSocket(url, { headers });
  const seen = { output: '', errors: [] as string[] };
  socket.on('message', (raw) => {
    const message = JSON.parse(raw.toString()) as { type: string; data?: string };
    if (message.type === 'output') seen.output += message.data;
    if (message.type === 'error') seen.errors.push(message.data ?? '');
  });
  await once(socket, 'open');
  return {
    socket,
    seen,
    send: (message: object) => socket.send(JSON.stringify(message)),
    shows: (pattern: RegExp) => eventually(`the terminal shows ${pattern}`, async () => pattern.test(seen.output) || undefined, 20_000),
  };
}

describe('terminal (/terminal/ws)', () => {
  const auth = () => ({ authorization: `Bearer ${platform.tenant.admin.apiKey}`, 'x-service-workspace': platform.tenant.workspace });
  const terminalUrl = async (query: string) => `${(await deployed()).metadata.url!.replace(/^http/, 'ws')}/terminal/ws${query}`;
  /** Processes of the sandbox whose command line has `text` (the pattern's brackets keep grep from finding itself). */
  const running = async (pattern: string) => {
    const sandbox = await deployed();
    const found = await sandbox.process.exec({ command: `cat /proc/[0-9]*/cmdline | tr '\\0' ' ' | grep -c '${pattern}' || true`, waitForCompletion: true });
    return Number(found.stdout.trim());
  };

  test('a typed command runs in a shell on a terminal of the asked size; a resize reaches stty; closing ends the shell and its jobs', async () => {
    const terminal = await openTerminal(await terminalUrl('?cols=80&rows=24'), auth());
    terminal.send({ type: 'input', data: 'echo "sum=$((6*7))"; stty size\r' });
    await terminal.shows(/sum=42\r?\n24 80\r?\n/);

    terminal.send({ type: 'resize', cols: 132, rows: 40 });
    terminal.send({ type: 'input', data: 'echo "now:"; stty size; sleep 4321 &\r' });
    await terminal.shows(/now:\r?\n40 132\r?\n/);
    expect(terminal.seen.errors).toEqual([]);
    await eventually('the background job runs', async () => (await running('sleep 432[1]')) === 1 || undefined);

    terminal.socket.close();
    await eventually('the shell and its job ended', async () => (await running('sleep 432[1]')) === 0 || undefined);
  });

  test('bad messages are answered with an error naming the field, the terminal goes on; a bad size is a 400 before the upgrade', async () => {
    const terminal = await openTerminal(await terminalUrl(''), auth());
    terminal.send({ type: 'resize', cols: 0, rows: 10 });
    terminal.send({ type: 'paste', data: 'x' });
    terminal.socket.send('not json');
    terminal.send({ type: 'input', data: 'echo "still=$((1+1))"\r' });
    await terminal.shows(/still=2/);
    expect(terminal.seen.errors).toEqual([expect.stringMatching(/'cols'/), expect.stringMatching(/'type'/), expect.stringMatching(/JSON/)]);
    terminal.socket.close();

    const refused = new WebSocket(await terminalUrl('?rows=70000'), { headers: auth() });
    const [, response] = (await once(refused, 'unexpected-response')) as [unknown, import('node:http').IncomingMessage];
    expect(response.statusCode).toBe(400);
    let body = '';
    for await (const chunk of response) body += String(chunk);
    expect(JSON.parse(body).error).toMatch(/'rows'/);

    const plain = await fetch((await terminalUrl('')).replace(/^ws/, 'http'), { headers: auth() });
    expect(plain.status).toBe(426);
  });
});
