import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createCallbackActivities, fileFailureRecorder, type PortCallbackFailure } from '../../../activities/callback';
import type { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import { PortEventRelay } from '../../../runtime/port-event-relay';
import { portCallbackStarter } from '../../../workers/port-callback-starter';
import type { SandboxHandle } from '../../../runtime/sandbox-runtime';
import { formatPortEvent, type PortEvent } from '../../../sandbox-agent/contract/port-events';
import { portCallbackWorkflowId } from '../../../workflows/port-callback';
import { testStack } from '../../setup/stack';
import { callSandbox, runtimeDataDir, sandboxSpec, testRuntime, until } from '../../helpers/sandbox-runtime';

// Port callbacks end to end: a real sandbox detects a port, the relay starts a delivery
// workflow on the real Temporal, and a worker created here POSTs to a real HTTP target.
jest.setTimeout(60_000);

const dataDir = runtimeDataDir('port-callback');
const taskQueue = `port-callback-${randomBytes(4).toString('hex')}`;
let runtime: BwrapRuntime;
let sandbox: SandboxHandle;
let worker: Worker;
let running: Promise<void>;
let client: Client;
let relay: PortEventRelay;
const failures: PortCallbackFailure[] = [];
// Short, so that giving up is seen within the test.
const delivery = { giveUpAfterMs: 4_000, initialRetryMs: 100, maxRetryIntervalMs: 400 };

/** A callback target: answers each request with the next scripted status (the last one repeats). */
class Target {
  readonly requests: { headers: http.IncomingHttpHeaders; body: unknown }[] = [];
  private server!: http.Server;
  constructor(private readonly statuses: number[]) {}
  async listen(): Promise<string> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.requests.push({ headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString()) });
        res.writeHead(this.statuses[Math.min(this.requests.length - 1, this.statuses.length - 1)]).end();
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks/port`;
  }
  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

beforeAll(async () => {
  const { temporalAddress } = testStack();
  runtime = testRuntime(dataDir);
  sandbox = await runtime.start(sandboxSpec({ name: 'callback-box' }));
  const recordToFile = fileFailureRecorder(dataDir);
  worker = await Worker.create({
    connection: await NativeConnection.connect({ address: temporalAddress }),
    taskQueue,
    workflowsPath: require.resolve('../../../workflows/port-callback'),
    activities: createCallbackActivities({
      recordFailure: async (failure) => {
        failures.push(failure);
        await recordToFile(failure);
      },
    }),
  });
  running = worker.run();
  client = new Client({ connection: await Connection.connect({ address: temporalAddress }) });
  relay = new PortEventRelay({ dataDir, startDelivery: portCallbackStarter(client, taskQueue, delivery), pollMs: 200 });
  relay.start();
});

afterAll(async () => {
  await relay?.close();
  worker?.shutdown();
  await running?.catch(() => undefined);
  await client?.connection.close();
  for (const s of (await runtime?.list()) ?? []) await runtime.remove(s.id);
  fs.rmSync(dataDir, { recursive: true, force: true });
});


function events(): PortEvent[] {
  const log = runtime.layout(sandbox.id).eventLog;
  return fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as PortEvent) : [];
}

test('a detected port reaches its callback, retried until the target succeeds, with one idempotency key', async () => {
  const target = new Target([503, 500, 200]);
  const callback = await target.listen();
  try {
    const server = await callSandbox(sandbox.socketPath, 'POST', '/process', { command: 'sleep 0.2; exec python3 -m http.server 8200 --bind 127.0.0.1', name: 'web' });
    expect((await callSandbox(sandbox.socketPath, 'POST', `/network/process/${server.json.pid}/monitor`, { callback })).status).toBe(200);

    await until('three delivery attempts', () => target.requests.length >= 3);
    const keys = new Set(target.requests.map((r) => r.headers['idempotency-key']));
    expect(keys.size).toBe(1);
    const [event] = events().filter((e) => e.port === 8200);
    expect([...keys][0]).toBe(event.key);
    for (const request of target.requests) {
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.body).toEqual({ pid: server.json.pid, port: 8200, sandbox: 'callback-box', detectedAt: event.detectedAt });
    }
    expect(await outcomeOf(event.key)).toEqual({ delivered: true, status: 200 });
  } finally {
    await callSandbox(sandbox.socketPath, 'DELETE', '/process/web/kill');
    await target.close();
  }
});

test('a relay that reads the log again starts no delivery twice', async () => {
  const before = events().length;
  expect(before).toBeGreaterThan(0);
  // As if the relay had crashed and lost its progress: a new one re-reads the whole log.
  await relay.close();
  fs.rmSync(runtime.layout(sandbox.id).relayCursor, { force: true });
  relay = new PortEventRelay({ dataDir, startDelivery: portCallbackStarter(client, taskQueue, delivery) });
  await relay.drain(sandbox.id);
  expect(relay.stats).toEqual({ started: 0, duplicates: before, skipped: 0 });
  relay.start();
});

test('a target refusing the event (400) ends delivery at once; the failure is recorded', async () => {
  const target = new Target([400]);
  const event = appendEvent(await target.listen());
  try {
    expect(await outcomeOf(event.key)).toEqual({ delivered: false, error: 'callback answered 400' });
    expect(target.requests).toHaveLength(1);
    expect(failures.find((f) => f.event.key === event.key)).toMatchObject({ sandboxId: sandbox.id, error: 'callback answered 400' });
    const recorded = fs.readFileSync(`${runtime.layout(sandbox.id).root}/port-callback-failures.jsonl`, 'utf8');
    expect(recorded).toContain(event.key);
  } finally {
    await target.close();
  }
});

test('a target that stays down is given up after the bounded delivery time', async () => {
  const target = new Target([200]);
  const callback = await target.listen();
  await target.close();
  const event = appendEvent(callback);
  const outcome = await outcomeOf(event.key);
  expect(outcome.delivered).toBe(false);
  expect(outcome.error).toMatch(/^gave up: no success within the delivery time/);
  expect(failures.some((f) => f.event.key === event.key)).toBe(true);
});

test('lines that are no valid event are skipped; valid ones are started once, within the rate limit', async () => {
  // A sandbox folder of its own, written by hand: the agent's log as a malicious user could leave it.
  const otherDir = runtimeDataDir('port-callback-forged');
  const layout = runtime.layout('forged-box');
  const eventLog = layout.eventLog.replace(dataDir, otherDir);
  fs.mkdirSync(eventLog.slice(0, eventLog.lastIndexOf('/')), { recursive: true });
  const target = new Target([200]);
  const valid: PortEvent = { key: `valid-${randomBytes(4).toString('hex')}`, callback: await target.listen(), pid: 3, port: 3000, sandbox: 'forged-box', detectedAt: new Date().toISOString() };
  fs.writeFileSync(
    eventLog,
    [
      'not json',
      JSON.stringify({ ...valid, key: 'file-url', callback: 'file:///etc/passwd' }),
      JSON.stringify({ ...valid, key: 'bad port', port: 70000 }),
      JSON.stringify(valid),
      JSON.stringify({ ...valid, key: `second-${valid.key}` }),
      '{"partial": ',
    ].join('\n'),
  );
  // One delivery per poll period: the second valid event waits for the next period.
  const relayOfOther = new PortEventRelay({ dataDir: otherDir, startDelivery: portCallbackStarter(client, taskQueue), maxEventsPerPoll: 1 });
  try {
    await relayOfOther.drain('forged-box');
    await relayOfOther.drain('forged-box');
    expect(relayOfOther.stats).toEqual({ started: 1, duplicates: 0, skipped: 3 });
    await until('the valid event to be delivered', () => target.requests.length === 1);
    expect(target.requests[0].headers['idempotency-key']).toBe(valid.key);
  } finally {
    await relayOfOther.close();
    await target.close();
    fs.rmSync(otherDir, { recursive: true, force: true });
  }
});

/** The delivery workflow's result, once the relay has started it. */
function outcomeOf(key: string) {
  return until('the delivery outcome', () => client.workflow.getHandle(portCallbackWorkflowId(sandbox.id, key)).result().catch(() => undefined));
}

/** An event as the agent would write it (the relay picks it up from the log). */
function appendEvent(callback: string): PortEvent {
  const event: PortEvent = { key: `test-${randomBytes(6).toString('hex')}`, callback, pid: 2, port: 9999, sandbox: 'callback-box', detectedAt: new Date().toISOString() };
  fs.appendFileSync(runtime.layout(sandbox.id).eventLog, formatPortEvent(event));
  return event;
}
