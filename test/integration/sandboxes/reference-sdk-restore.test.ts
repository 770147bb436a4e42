import { SandboxInstance } from '@blaxel/core';
import fc from 'fast-check';
import fs from 'node:fs';
import path from 'node:path';
import { createTenant, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { deployedSandbox, startReferenceSdkPlatform, type ReferenceSdkPlatform } from '../../helpers/reference-sdk';
import { eventually } from '../../helpers/workers';

// Restore of a sandbox to one of its snapshots through the reference SDK
// (`sandbox.snapshots.restore(name)`, POST /v0/sandboxes/{name}/snapshots/{snapshot}/restore): its
// files become the snapshot's, its processes start afresh, under the same name. Real sandboxes on
// a busy 2-core machine: generous limits; no test asserts on time.
jest.setTimeout(180_000);

let platform: ReferenceSdkPlatform;
let t: TestApp;
let tenant: TestTenant;

beforeAll(async () => {
  platform = await startReferenceSdkPlatform('sdk-restore');
  ({ t, tenant } = platform);
}, 90_000);

afterAll(() => platform?.stop(), 60_000);

async function source(): Promise<SandboxInstance> {
  const name = unique('src');
  await SandboxInstance.create({ name, image: 'blaxel/base-image:latest', memory: 256 });
  return deployedSandbox(name);
}

async function call(method: string, route: string, body?: unknown, as: TestTenant = tenant): Promise<{ status: number; json: any }> {
  const response = await t.app.inject({
    method: method as 'POST',
    url: route,
    headers: { authorization: `Bearer ${as.admin.apiKey}`, 'x-service-workspace': as.workspace, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  return { status: response.statusCode, json: response.json() };
}

/** The sandbox's body once its events say the restore to `snapshot` ended (done or refused). */
const restoreSettled = (name: string, snapshot: string) =>
  eventually(`${name} restored`, async () => {
    const got = await call('GET', `/v0/sandboxes/${name}`);
    const ended = got.json.events?.some((event: { message: string }) => event.message.includes(`snapshot '${snapshot}'`) && /restored to|refused|failed/.test(event.message));
    return ended ? got.json : undefined;
  }, 90_000);

test("a restore puts the snapshot's files back and starts the processes afresh; the name and its snapshots stay", async () => {
  const src = await source();
  await src.fs.write('/home/user/state.txt', 'version 1');
  await src.fs.write('/workspace/kept.txt', 'from the snapshot');
  const snapshot = await src.snapshots.create(unique('v1'));
  expect(snapshot.status).toBe('ready');

  await src.fs.write('/home/user/state.txt', 'version 2');
  await src.fs.write('/home/user/later.txt', 'written after the snapshot');
  await src.process.exec({ name: 'sleeper', command: 'sleep 600', waitForCompletion: false });
  expect((await src.process.list()).map((p) => p.name)).toContain('sleeper');

  expect(await src.snapshots.restore(snapshot.name)).toEqual({ name: src.metadata.name, snapshotId: snapshot.id });
  const settled = await restoreSettled(src.metadata.name, snapshot.name);
  expect(settled.status).toBe('DEPLOYED');
  expect(settled.events.at(-1).message).toBe(`restored to snapshot '${snapshot.name}': files replaced, processes started afresh`);

  const restored = await SandboxInstance.get(src.metadata.name);
  expect(await restored.fs.read('/home/user/state.txt')).toBe('version 1');
  expect(await restored.fs.read('/workspace/kept.txt')).toBe('from the snapshot');
  const later = await restored.process.exec({ command: 'test -e /home/user/later.txt && echo present || echo absent', waitForCompletion: true });
  expect(later.logs).toBe('absent\n');
  expect((await restored.process.list()).map((p) => p.name)).not.toContain('sleeper');
  // The snapshot is still there, and a second restore to it works the same.
  expect((await restored.snapshots.list()).map((s) => s.id)).toContain(snapshot.id);
  await restored.fs.write('/home/user/state.txt', 'version 3');
  await call('POST', `/v0/sandboxes/${src.metadata.name}/snapshots/${snapshot.id}/restore`);
  await eventually('restored again', async () => ((await restored.fs.read('/home/user/state.txt').catch(() => '')) === 'version 1' ? true : undefined), 90_000);
});

test("only a sandbox's own ready snapshots restore it: another's, an unknown one or another workspace's sandbox are 404s", async () => {
  const [a, b] = [await source(), await source()];
  const ofB = await b.snapshots.create(unique('of-b'));
  const restore = (sandbox: string, snapshot: string, as?: TestTenant) => call('POST', `/v0/sandboxes/${sandbox}/snapshots/${snapshot}/restore`, undefined, as);
  expect(await restore(a.metadata.name, ofB.id)).toMatchObject({ status: 404, json: { message: expect.stringContaining(ofB.id) } });
  expect((await restore(a.metadata.name, 'no-such-snapshot')).status).toBe(404);
  expect((await restore(unique('nobody'), ofB.id)).status).toBe(404);
  const other = await createTenant(t.app.pg, 'other');
  expect((await restore(b.metadata.name, ofB.id, other)).status).toBe(404);
  // A fork of a sandbox of another workspace is not found either.
  expect((await call('POST', `/v0/sandboxes/${b.metadata.name}/fork`, { targetName: unique('steal') }, other)).status).toBe(404);
});

test('a restore racing the deletion of its sandbox (generated schedules): the sandbox goes, with its processes and files', async () => {
  let round = 0;
  await fc.assert(
    fc.asyncProperty(fc.nat(150), fc.nat(150), async (restoreDelay, deleteDelay) => {
      const src = await source();
      const snapshot = await src.snapshots.create(unique(`race${round++}`));
      const id = await tenantResources(t, tenant).idOf('sandboxes', src.metadata.name);
      const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
      const [restored, deleted] = await Promise.all([
        later(restoreDelay).then(() => call('POST', `/v0/sandboxes/${src.metadata.name}/snapshots/${snapshot.id}/restore`)),
        later(deleteDelay).then(() => call('DELETE', `/v0/sandboxes/${src.metadata.name}`)),
      ]);
      expect(deleted.status).toBe(200);
      // Asked before the deletion: accepted; after: the sandbox is going (409) or gone (404).
      expect([200, 404, 409]).toContain(restored.status);
      await eventually('the sandbox gone', async () => ((await call('GET', `/v0/sandboxes/${src.metadata.name}`)).status === 404 ? true : undefined), 90_000);
      expect(fs.existsSync(path.join(t.config.dataDir, 'sandboxes', id))).toBe(false);
    }),
    { numRuns: Number(process.env.HANGAR_INTERLEAVING_RUNS ?? 5), ...(process.env.HANGAR_INTERLEAVING_SEED ? { seed: Number(process.env.HANGAR_INTERLEAVING_SEED) } : {}) },
  );
});
