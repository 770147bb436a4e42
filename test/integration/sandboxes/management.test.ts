import type { FastifyInstance } from 'fastify';
import fs from 'node:fs';
import { sandboxWorkflowId } from '../../../domain/sandbox/sandbox';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { testRuntime } from '../../helpers/sandbox-runtime';
import { stopRuntimeTest, startSandboxPlatform } from '../../helpers/runtime-platform';
import { eventually, startControlWorker, startNodeWorker, type RunningWorker } from '../../helpers/workers';
import { outboxEvents } from '../../helpers/usage-outbox';

let t: TestApp;
let tenant: TestTenant;
let gateway: FastifyInstance;
let control: RunningWorker;
let node: RunningWorker | undefined;
let runtime: ReturnType<typeof testRuntime>;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('sandboxes'), sandboxIdleSeconds: 2 });
  tenant = await createTenant(t.app.pg, 'sbx');
  ({ runtime, gateway, control, node } = await startSandboxPlatform(t));
}, 60_000);

afterAll(() => stopRuntimeTest({ runtime, node, control, gateway, t }), 60_000);

const resources = () => tenantResources(t, tenant);
const api: ReturnType<typeof tenantResources>['api'] = (...args) => resources().api(...args);
const sandboxCall = (name: string, method: 'GET' | 'POST' | 'DELETE', path: string, payload?: object, key?: string) =>
  resources().sandboxCall(gateway, name, method, path, payload, key);
const deployed = (name: string) => resources().status('sandboxes', name, 'DEPLOYED');
const gone = (name: string) => resources().gone('sandboxes', name);
const idOf = (name: string) => resources().idOf('sandboxes', name);

test('create: DEPLOYING, then DEPLOYED and RUNNING at its url; the sandbox API answers through the gateway', async () => {
  const created = await api('POST', '/v0/sandboxes', { metadata: { name: 'first' }, spec: { runtime: { memory: 256 } } });
  expect(created.statusCode).toBe(200);
  expect(created.json().status).toBe('DEPLOYING');
  expect(created.json().metadata.url).toBe(`http://${t.config.host}:${t.config.sandboxPort}/${tenant.workspace}/first`);

  const body = await deployed('first');
  expect(body.state).toBe('RUNNING');
  // On base-image, the default image: its start says which build of it the node has.
  expect(body.spec.runtime.image).toBe('base-image');
  expect(body.events.map((e: { status: string; message: string }) => [e.status, e.message.replace(/sha256:[0-9a-f]{64}/, 'sha256:...')])).toEqual([
    ['DEPLOYING', 'creating the sandbox'],
    ['DEPLOYING', "image 'base-image' is on the node (sha256:...)"],
    ['DEPLOYED', 'sandbox is running'],
  ]);

  const run = await sandboxCall('first', 'POST', '/process', { command: 'echo hello from $(hostname)', waitForCompletion: true });
  expect(run.statusCode).toBe(200);
  expect(run.json()).toEqual(expect.objectContaining({ status: 'completed', exitCode: 0 }));
  expect(run.json().stdout).toContain('hello from');

  const desc = await t.app.temporal.workflow.getHandle(sandboxWorkflowId(tenant.workspace, 'first')).describe();
  expect(desc.searchAttributes).toEqual(
    expect.objectContaining({ HangarWorkspace: [tenant.workspace], HangarResourceKind: ['sandbox'], HangarResourceName: ['first'] }),
  );

  const dup = await api('POST', '/v0/sandboxes', { metadata: { name: 'first' } });
  expect(dup.statusCode).toBe(409);
}, 90_000);

test('the gateway checks the bearer token against the sandbox workspace and forwards no platform credential', async () => {
  expect((await sandboxCall('first', 'GET', '/health', undefined, 'hgr_invalid')).statusCode).toBe(401);
  const stranger = await createTenant(t.app.pg, 'sbx-other');
  const denied = await sandboxCall('first', 'GET', '/health', undefined, stranger.admin.apiKey);
  expect(denied.statusCode).toBe(403);
  expect((await sandboxCall('missing', 'GET', '/health')).statusCode).toBe(404);

  const env = await sandboxCall('first', 'POST', '/process', { command: 'env', waitForCompletion: true });
  expect(env.json().stdout).not.toContain(tenant.admin.apiKey);
});

test('idle sandboxes go to STANDBY (frozen) and the next request resumes them transparently', async () => {
  const sandbox = (await api('GET', '/v0/sandboxes/first')).json();
  const id = await idOf('first');
  expect(sandbox.state).toBe('RUNNING');
  await eventually('standby', async () => ((await api('GET', '/v0/sandboxes/first')).json().state === 'STANDBY' ? true : undefined), 30_000);
  expect(await runtime.isFrozen(id)).toBe(true);

  const first = await sandboxCall('first', 'POST', '/process', { command: 'echo resumed', waitForCompletion: true });
  expect(first.statusCode).toBe(200);
  expect(first.json().stdout).toBe('resumed\n');
  expect(await runtime.isFrozen(id)).toBe(false);
  await eventually('RUNNING again', async () => ((await api('GET', '/v0/sandboxes/first')).json().state === 'RUNNING' ? true : undefined));
}, 60_000);

test('a ttl deletes the sandbox when it is reached', async () => {
  await api('POST', '/v0/sandboxes', { metadata: { name: 'short' }, spec: { runtime: { ttl: '4s', memory: 256 } } });
  const body = await deployed('short');
  expect(body.expiresIn).toBeLessThanOrEqual(4);
  await gone('short');
}, 90_000);

test('invalid lifetime rules are refused naming the field', async () => {
  const res = await api('POST', '/v0/sandboxes', {
    metadata: { name: 'bad' },
    spec: { lifecycle: { expirationPolicies: [{ type: 'date', value: 'tomorrow', action: 'delete' }] } },
  });
  expect(res.statusCode).toBe(400);
  expect(res.json().message).toContain('body.spec.lifecycle.expirationPolicies[0].value');
  const ttl = await api('POST', '/v0/sandboxes', { metadata: { name: 'bad' }, spec: { runtime: { ttl: '1 year' } } });
  expect(ttl.statusCode).toBe(400);
  expect(ttl.json().message).toContain('body.spec.runtime.ttl');
});

test('delete (of a sandbox in standby by now): DELETING, then gone with its processes and files', async () => {
  const id = await idOf('first');
  await eventually('standby again', async () => ((await runtime.status(id))?.state === 'frozen' ? true : undefined));
  const del = await api('DELETE', '/v0/sandboxes/first');
  expect(del.statusCode).toBe(200);
  expect(del.json().status).toBe('DELETING');
  await gone('first');
  expect(await runtime.status(id)).toBeUndefined();
  expect(fs.existsSync(runtime.socketPath(id))).toBe(false);

  // Its life was metered: compute while RUNNING, snapshot storage while in STANDBY, its image throughout.
  const mine = await outboxEvents(t.app.pg, tenant.accountId, id);
  const dimensions = new Set(mine.map((e) => e.billing_dimension));
  expect([...dimensions].sort()).toEqual(['sandbox_compute_runtime_gbs', 'sandbox_image_storage_gbs', 'sandbox_snapshot_storage_gbs']);
  for (const event of mine) expect(Number(event.quantity)).toBeGreaterThan(0);
  const computeSeconds = mine
    .filter((e) => e.billing_dimension === 'sandbox_compute_runtime_gbs')
    .reduce((sum, e) => sum + Number(e.quantity), 0) / (256 / 1024);
  expect(computeSeconds).toBeGreaterThan(1);
  expect(computeSeconds).toBeLessThan(120);
}, 90_000);

test('a node worker that is down during create: the sandbox deploys once it is back', async () => {
  await node?.stop();
  node = undefined;
  const created = await api('POST', '/v0/sandboxes', { metadata: { name: 'patient' }, spec: { runtime: { memory: 256 } } });
  expect(created.statusCode).toBe(200);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  expect((await api('GET', '/v0/sandboxes/patient')).json().status).toBe('DEPLOYING');
  node = await startNodeWorker(t.config, runtime);
  await deployed('patient');
  const run = await sandboxCall('patient', 'POST', '/process', { command: 'true', waitForCompletion: true });
  expect(run.json().exitCode).toBe(0);
  await api('DELETE', '/v0/sandboxes/patient');
  // The gateway routed to it a moment ago (its route is cached): the first request once it is
  // DELETING is refused all the same, as the status change is announced to the gateways.
  await eventually('DELETING', async () => {
    const res = await api('GET', '/v0/sandboxes/patient');
    return res.statusCode === 404 || res.json().status === 'DELETING' ? true : undefined;
  });
  const afterDelete = await sandboxCall('patient', 'GET', '/health');
  expect([503, 404]).toContain(afterDelete.statusCode);
  await gone('patient');
}, 120_000);

test('a control worker that is down during delete: the sandbox is gone once it is back', async () => {
  await api('POST', '/v0/sandboxes', { metadata: { name: 'orphan' }, spec: { runtime: { memory: 256 } } });
  await deployed('orphan');
  const id = await idOf('orphan');
  await control.stop();
  const del = await api('DELETE', '/v0/sandboxes/orphan');
  expect(del.statusCode).toBe(200);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  expect((await api('GET', '/v0/sandboxes/orphan')).statusCode).toBe(200);
  control = await startControlWorker(t.config, t.app.pg);
  await gone('orphan');
  expect(await runtime.status(id)).toBeUndefined();
}, 120_000);
