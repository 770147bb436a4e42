import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { buildSandboxGatewayApp, type SandboxNodeAccess } from '../../../api/gateway/sandbox-app';
import { ResourceStore } from '../../../store/resources';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { stopRuntimeTest, startSandboxPlatform, type SandboxPlatform } from '../../helpers/runtime-platform';

/**
 * A request through the sandbox gateway for a sandbox still starting is held until it runs
 * (issue 16): against the real node, and, for the orderings and outcomes, against PostgreSQL's
 * real notices with a stand-in node whose "sandbox" is a small HTTP server on a Unix socket.
 */

describe('create, then call at once, against the real node', () => {
  let t: TestApp;
  let tenant: TestTenant;
  let platform: SandboxPlatform;

  beforeAll(async () => {
    t = await startTestApp({ taskQueue: unique('start-hold') });
    tenant = await createTenant(t.app.pg, 'hold');
    platform = await startSandboxPlatform(t);
  }, 60_000);

  afterAll(() => stopRuntimeTest({ ...platform, t }), 60_000);

  test('POST /process and PUT of a file right after create both succeed', async () => {
    const resources = tenantResources(t, tenant);
    const created = await resources.api('POST', '/v0/sandboxes', { metadata: { name: 'eager' }, spec: { runtime: { memory: 128 } } });
    expect(created.json().status).toBe('DEPLOYING');
    const [run, put] = await Promise.all([
      resources.sandboxCall(platform.gateway, 'eager', 'POST', '/process', { command: 'echo ready', waitForCompletion: true }),
      resources.sandboxCall(platform.gateway, 'eager', 'PUT', '/filesystem/tmp/early.txt', { content: 'early' }),
    ]);
    expect(run.statusCode).toBe(200);
    expect(run.json().logs).toContain('ready');
    expect(put.statusCode).toBe(200);
    const read = await resources.sandboxCall(platform.gateway, 'eager', 'GET', '/filesystem/tmp/early.txt');
    expect(read.json().content).toBe('early');
  }, 120_000);
});

describe('held while DEPLOYING, against real notices', () => {
  let t: TestApp;
  let tenant: TestTenant;
  let store: ResourceStore;
  let gateway: FastifyInstance;
  let impatient: FastifyInstance;
  let upstream: http.Server;
  let dir: string;

  beforeAll(async () => {
    // No worker polls this queue: a sandbox created here stays DEPLOYING until the test moves it.
    t = await startTestApp({ taskQueue: unique('start-hold-nodeless') });
    tenant = await createTenant(t.app.pg, 'held');
    store = new ResourceStore(t.app.pg);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-hold-'));
    const socketPath = path.join(dir, 'sandbox.sock');
    upstream = http.createServer((request, response) => response.end(JSON.stringify({ served: request.url })));
    await new Promise<void>((resolve) => upstream.listen(socketPath, resolve));
    const node: SandboxNodeAccess = { socketPath: () => socketPath, portSocket: async () => socketPath, isFrozen: async () => false, thaw: async () => ({ generation: 0, frozen: false }) };
    gateway = await buildSandboxGatewayApp({ ...t.config, sandboxStartWaitSeconds: 600 }, node);
    impatient = await buildSandboxGatewayApp({ ...t.config, sandboxStartWaitSeconds: 1 }, node);
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
    await impatient?.close();
    upstream?.close();
    fs.rmSync(dir, { recursive: true, force: true });
    await t?.app.close();
  }, 60_000);

  const resources = () => tenantResources(t, tenant);
  const create = async (name: string) => {
    expect((await resources().api('POST', '/v0/sandboxes', { metadata: { name } })).json().status).toBe('DEPLOYING');
    return resources().idOf('sandboxes', name);
  };

  test('whether the request comes before or after the outcome, and whatever news comes between, it answers the outcome', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.constantFrom('DEPLOYED' as const, 'FAILED' as const), fc.nat(3), async (requestFirst, outcome, notes) => {
        const name = `hold-${run++}`;
        const id = await create(name);
        const request = () => resources().sandboxCall(gateway, name, 'GET', '/health');
        const pending = requestFirst ? request() : undefined;
        // News that changes no status (announced like a transition) must not end the hold.
        for (let i = 0; i < notes; i++) await store.note(id, { type: 'Normal', message: `step ${i}` }, { step: i });
        await store.transition(id, outcome, outcome === 'FAILED' ? { type: 'Warning', message: 'image base-x not found' } : { type: 'Normal', message: 'started' });
        const response = await (pending ?? request());
        if (outcome === 'DEPLOYED') {
          expect(response.statusCode).toBe(200);
          expect(response.json()).toEqual({ served: '/health' });
        } else {
          expect(response.statusCode).toBe(503);
          expect(response.json()).toMatchObject({ error: 'sandbox_failed' });
          expect(response.json().message).toContain('image base-x not found');
        }
      }),
      { numRuns: 12 },
    );
  }, 120_000);

  test('a sandbox that never becomes ready: 504 naming the reason once the bound is reached', async () => {
    await create('stuck');
    const response = await resources().sandboxCall(impatient, 'stuck', 'POST', '/process', { command: 'true' });
    expect(response.statusCode).toBe(504);
    expect(response.json().error).toBe('sandbox_start_timeout');
    expect(response.json().message).toContain('still starting (DEPLOYING) after 1 s');
  }, 30_000);

  test('a sandbox deleted while the request is held: 404', async () => {
    const id = await create('vanishing');
    const pending = resources().sandboxCall(gateway, 'vanishing', 'GET', '/health');
    await store.deleteById(id);
    const response = await pending;
    expect(response.statusCode).toBe(404);
  }, 30_000);
});
