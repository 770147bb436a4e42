import type { FastifyInstance } from 'fastify';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { deployFolder, type DeployTarget } from '../../../cli/deploy';
import { bundlePaths } from '../../../domain/workloads/bundles';
import { revisionSandboxId } from '../../../domain/workloads/workload';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { testRuntime } from '../../helpers/sandbox-runtime';
import { eventually, startControlWorker, startNodeWorker, type RunningWorker } from '../../helpers/workers';
import { deployTarget, startWorkloadPlatform, stopRuntimeTest } from '../../helpers/runtime-platform';
import { outboxEvents } from '../../helpers/usage-outbox';

// Workloads with `minScale: 0`: stopped after an idle period, started again by the next request.
const IDLE_SECONDS = 2;

let t: TestApp;
let tenant: TestTenant;
let resources: ReturnType<typeof tenantResources>;
let gateway: FastifyInstance;
let runUrl: string;
let target: DeployTarget;
let control: RunningWorker;
let node: RunningWorker;
let runtime: ReturnType<typeof testRuntime>;
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-scale-'));

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('scale'), workloadIdleSeconds: IDLE_SECONDS, workloadWakeTimeoutSeconds: 30 });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  tenant = await createTenant(t.app.pg, 'scale');
  resources = tenantResources(t, tenant);
  // A warm sandbox waiting, as on a node: starts from zero take it over.
  ({ runtime, gateway, runUrl, control, node } = await startWorkloadPlatform(t, { runtime: { warmPool: 1 } }));
  target = deployTarget(t, tenant);
}, 60_000);

afterAll(() => stopRuntimeTest({ runtime, node, control, gateway, t, scratch }), 60_000);

/** An agent that answers its input and its pid. */
const SERVER = `
require('http').createServer((req, res) => {
  let body = '';
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => res.end(JSON.stringify({ output: 'got ' + JSON.parse(body || '{}').inputs, pid: process.pid })));
}).listen(process.env.PORT, process.env.HOST);
`;

async function deploy(name: string, runtimeSpec: Record<string, unknown>) {
  const dir = fs.mkdtempSync(path.join(scratch, `${name}-`));
  fs.writeFileSync(path.join(dir, 'hangar.json'), JSON.stringify({ kind: 'agents', name, spec: { runtime: { memory: 256, ...runtimeSpec } } }));
  fs.writeFileSync(path.join(dir, 'main.js'), SERVER);
  const body = await deployFolder(dir, target);
  expect(body.status).toBe('DEPLOYED');
  return { id: await resources.idOf('agents', name), sandboxId: revisionSandboxId(await resources.idOf('agents', name), 1) };
}

function ask(name: string, inputs: string) {
  return fetch(`${runUrl}/${tenant.workspace}/agents/${name}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${tenant.admin.apiKey}` },
    body: JSON.stringify({ inputs }),
  }).then(async (res) => ({ status: res.status, body: (await res.json()) as any }));
}

const get = async (name: string) => (await resources.api('GET', `/v0/agents/${name}`)).json();

function inState(name: string, state: 'RUNNING' | 'SCALED_TO_ZERO') {
  return eventually(`${name} ${state}`, async () => {
    const body = await get(name);
    return body.state === state ? body : undefined;
  });
}
/** The workload says SCALED_TO_ZERO (recorded before the stop, so gateways stop routing to it) and its sandbox is gone. */
async function scaledToZero(name: string) {
  const body = await inState(name, 'SCALED_TO_ZERO');
  const sandboxId = revisionSandboxId(await resources.idOf('agents', name), 1);
  await eventually(`${name} removed`, async () => ((await runtime.status(sandboxId)) === undefined ? true : undefined));
  return body;
}

/** Usage events recorded for one resource so far (outbox rows, before the flush moves them); event_time is in whole seconds. */
async function usageOf(resourceId: string): Promise<{ billing_dimension: string; event_time: number; quantity: number }[]> {
  return outboxEvents(t.app.pg, tenant.accountId, resourceId);
}

const startedAgain = (body: { events: { message: string }[] }) => body.events.filter((e) => /started again for a request/.test(e.message)).length;

describe('minScale 0', () => {
  let sleepy: { id: string; sandboxId: string };
  let always: { id: string; sandboxId: string };
  let scaledAt: number;
  let stoppedBy: number;
  let wokenAt: number;

  test('stops after the idle period: process and sandbox gone, status DEPLOYED with state SCALED_TO_ZERO; minScale 1 keeps running', async () => {
    always = await deploy('always', {});
    sleepy = await deploy('sleepy', { minScale: 0 });
    expect((await get('sleepy')).events.at(-1).message).toBe('revision 1: serving; scales to zero when idle');
    expect(await ask('sleepy', 'hi')).toEqual({ status: 200, body: { output: 'got hi', pid: expect.any(Number) } });
    expect((await ask('always', 'hi')).status).toBe(200);
    expect((await get('always')).state).toBe('RUNNING');

    const body = await scaledToZero('sleepy');
    expect(body.status).toBe('DEPLOYED');
    const event = body.events.at(-1);
    expect(event).toMatchObject({ type: 'Normal', status: 'DEPLOYED', message: `revision 1: scaled to zero after ${IDLE_SECONDS} s without requests` });
    scaledAt = Date.parse(event.time);
    stoppedBy = Date.now();
    expect(await runtime.status(sleepy.sandboxId)).toBeUndefined();
    expect(await runtime.pids(sleepy.sandboxId)).toEqual([]);

    // Two idle periods later, the always-on agent has not moved.
    await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 2000 + 500));
    const steady = await get('always');
    expect(steady.state).toBe('RUNNING');
    expect(steady.events.some((e: { message: string }) => e.message.includes('scaled to zero'))).toBe(false);
    expect((await runtime.status(always.sandboxId))?.state).toBe('running');
  }, 120_000);

  test('the next request starts it again and gets its answer', async () => {
    const woken = await ask('sleepy', 'are you there?');
    expect(woken).toEqual({ status: 200, body: { output: 'got are you there?', pid: expect.any(Number) } });
    // The request is answered first; the workflow records the start right after.
    const body = await inState('sleepy', 'RUNNING');
    expect(startedAgain(body)).toBe(1);
    wokenAt = Date.parse(body.events.find((e: { message: string }) => /started again/.test(e.message)).time);
    expect((await runtime.status(sleepy.sandboxId))?.state).toBe('running');
  }, 60_000);

  test('requests arriving while it starts are all answered, by one start', async () => {
    await scaledToZero('sleepy');
    const before = startedAgain(await get('sleepy'));
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => ask('sleepy', `n${i}`)));
    answers.forEach((answer, i) => expect(answer).toEqual({ status: 200, body: { output: `got n${i}`, pid: expect.any(Number) } }));
    expect(new Set(answers.map((a) => a.body.pid)).size).toBe(1);
    const after = await eventually('the start recorded', async () => {
      const body = await get('sleepy');
      return body.state === 'RUNNING' && startedAgain(body) > before ? body : undefined;
    });
    expect(startedAgain(after)).toBe(before + 1);
  }, 60_000);

  test('compute is charged while it runs, not while it is at zero', async () => {
    await scaledToZero('sleepy');
    const compute = await eventually('compute of the runs so far', async () => {
      const events = (await usageOf(sleepy.id)).filter((e) => e.billing_dimension === 'agent_compute_runtime_gbs');
      // Each period is [event_time, event_time + quantity / 0.25 GB seconds), its start rounded down to the second.
      const periods = events.map((e) => ({ from: e.event_time * 1000, to: e.event_time * 1000 + (e.quantity / 0.25) * 1000 }));
      return periods.some((p) => p.from >= wokenAt - 2_000) ? periods : undefined;
    });
    // The first run was charged up to its stop, the later ones from their start; the time between was not.
    expect(compute.some((p) => p.to >= scaledAt - 1_000 && p.to <= stoppedBy + 500)).toBe(true);
    expect(compute.filter((p) => p.from < wokenAt - 2_000 && p.to > stoppedBy + 500)).toEqual([]);
  }, 60_000);

  test('workers restarted while it sleeps: a request held meanwhile is answered once they are back', async () => {
    await scaledToZero('sleepy');
    await node.stop();
    await runtime.close();
    await control.stop();
    const held = ask('sleepy', 'still there?');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    control = await startControlWorker(t.config, t.app.pg);
    runtime = testRuntime(t.config.dataDir, { warmPool: 1 });
    // As a restarted node worker does: its warm pool refills on base-image, which the node has.
    await runtime.prewarm();
    node = await startNodeWorker(t.config, runtime);
    expect(await held).toEqual({ status: 200, body: { output: 'got still there?', pid: expect.any(Number) } });
    await inState('sleepy', 'RUNNING');
  }, 90_000);

  test('an async request wakes it too: the request workflow starts it and gets the answer', async () => {
    await scaledToZero('sleepy');
    const before = startedAgain(await get('sleepy'));
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${tenant.admin.apiKey}` };
    const accepted = await fetch(`${runUrl}/${tenant.workspace}/agents/sleepy?async=true`, { method: 'POST', headers, body: JSON.stringify({ inputs: 'later' }) });
    expect(accepted.status).toBe(202);
    const { id } = (await accepted.json()) as { id: string };
    const done = await eventually('the async request done', async () => {
      const view = (await (await fetch(`${runUrl}/${tenant.workspace}/agents/sleepy/requests/${id}`, { headers })).json()) as { status: string; result?: { body: string } };
      return view.status === 'succeeded' || view.status === 'failed' ? view : undefined;
    }, 60_000);
    // This agent answers without a JSON content type: its body comes back as text.
    expect(done).toMatchObject({ status: 'succeeded', result: { body: expect.stringContaining('"output":"got later"') } });
    expect(startedAgain(await inState('sleepy', 'RUNNING'))).toBe(before + 1);
  }, 90_000);

  test('a start that fails answers 503 with the reason as JSON, records a warning and leaves nothing running', async () => {
    const flaky = await deploy('flaky', { minScale: 0 });
    expect((await ask('flaky', 'first')).status).toBe(200);
    await scaledToZero('flaky');
    // The node's copy of the code loses its entry point (a damaged disk): the next start crashes.
    const [revision] = (await resources.api('GET', '/v0/agents/flaky/revisions')).json();
    fs.rmSync(path.join(bundlePaths(t.config.dataDir, revision.bundleSha256).unpacked, 'main.js'));
    const failed = await ask('flaky', 'second');
    expect(failed.status).toBe(503);
    expect(failed.body).toEqual({ error: 'workload_start_failed', message: expect.stringMatching(/agent 'flaky' was scaled to zero and could not start: .*exited with code 1/) });
    const body = await eventually('the warning', async () => {
      const current = await get('flaky');
      return current.events.at(-1).type === 'Warning' ? current : undefined;
    });
    expect(body).toMatchObject({ status: 'DEPLOYED', state: 'SCALED_TO_ZERO' });
    expect(body.events.at(-1).message).toMatch(/revision 1 could not start: the command exited with code 1 .*Cannot find module '\/app\/main.js'/s);
    expect(await runtime.status(flaky.sandboxId)).toBeUndefined();
  }, 90_000);
});
