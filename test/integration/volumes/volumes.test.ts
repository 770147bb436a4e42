import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { volumeWorkflowId } from '../../../domain/volume/volume';
import { VolumeStore } from '../../../runtime/volume-store';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { testRuntime } from '../../helpers/sandbox-runtime';
import { stopRuntimeTest, startSandboxPlatform } from '../../helpers/runtime-platform';
import { eventually, type RunningWorker } from '../../helpers/workers';
import { outboxEvents } from '../../helpers/usage-outbox';

let t: TestApp;
let tenant: TestTenant;
let gateway: FastifyInstance;
let control: RunningWorker;
let node: RunningWorker;
let runtime: ReturnType<typeof testRuntime>;
let store: VolumeStore;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('volumes') });
  tenant = await createTenant(t.app.pg, 'vol');
  ({ runtime, gateway, control, node } = await startSandboxPlatform(t));
  store = new VolumeStore({ dataDir: t.config.dataDir });
}, 60_000);

afterAll(() => stopRuntimeTest({ runtime, node, control, gateway, t }), 60_000);

const resources = () => tenantResources(t, tenant);
const api: ReturnType<typeof tenantResources>['api'] = (...args) => resources().api(...args);
const status = (kind: 'volumes' | 'sandboxes', name: string, wanted: string) => resources().status(kind, name, wanted, 30_000);
const gone = (kind: 'volumes' | 'sandboxes', name: string) => resources().gone(kind, name, 30_000);
const idOf = (kind: string, name: string) => resources().idOf(kind, name);

async function run(sandbox: string, command: string) {
  const res = await resources().sandboxCall(gateway, sandbox, 'POST', '/process', { command, waitForCompletion: true });
  expect(res.statusCode).toBe(200);
  return res.json() as { exitCode: number; stdout: string; stderr: string };
}

const mounting = (volume: string, readOnly = false) => ({ runtime: { memory: 256 }, volumes: [{ name: volume, mountPath: '/data', readOnly }] });

test('a volume outlives the sandbox that wrote to it, has a real size, and is metered', async () => {
  const loop = store.loopUnavailable() === undefined;
  const created = await api('POST', '/v0/volumes', { metadata: { name: 'data', labels: { team: 'a' } }, spec: { size: 16 } });
  expect(created.statusCode).toBe(200);
  expect(created.json().status).toBe('DEPLOYING');
  const deployed = await status('volumes', 'data', 'DEPLOYED');
  const volumeId = await idOf('volumes', 'data');
  expect(deployed.events.at(-1).message).toContain(loop ? 'ext4 image of 16 MB' : 'plain folder');
  expect(fs.existsSync(store.imagePath(volumeId))).toBe(loop);
  const desc = await t.app.temporal.workflow.getHandle(volumeWorkflowId(tenant.workspace, 'data')).describe();
  expect(desc.searchAttributes).toEqual(expect.objectContaining({ HangarResourceKind: ['volume'], HangarResourceName: ['data'] }));
  expect((await api('POST', '/v0/volumes', { metadata: { name: 'data' }, spec: { size: 16 } })).statusCode).toBe(409);

  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'writer' }, spec: mounting('data') })).statusCode).toBe(200);
  await status('sandboxes', 'writer', 'DEPLOYED');
  expect((await run('writer', 'echo kept > /data/note.txt && cat /data/note.txt')).stdout).toBe('kept\n');
  if (loop) {
    const full = await run('writer', 'dd if=/dev/zero of=/data/big bs=1M count=32');
    expect(full.exitCode).not.toBe(0);
    expect(full.stderr).toContain('No space left on device');
    expect((await run('writer', 'rm /data/big')).exitCode).toBe(0);
  }

  const inUse = await api('DELETE', '/v0/volumes/data');
  expect(inUse.statusCode).toBe(409);
  expect(inUse.json().message).toContain("'writer'");

  await api('DELETE', '/v0/sandboxes/writer');
  await gone('sandboxes', 'writer');

  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'reader' }, spec: mounting('data', true) })).statusCode).toBe(200);
  await status('sandboxes', 'reader', 'DEPLOYED');
  expect((await run('reader', 'cat /data/note.txt')).stdout).toBe('kept\n');
  expect((await run('reader', 'touch /data/other')).exitCode).not.toBe(0);

  // Growing is allowed (the image follows), shrinking is not.
  expect((await api('PUT', '/v0/volumes/data', { metadata: { name: 'data' }, spec: { size: 8 } })).statusCode).toBe(400);
  const grown = await api('PUT', '/v0/volumes/data', { metadata: { name: 'data', displayName: 'Data' }, spec: { size: 32 } });
  expect(grown.statusCode).toBe(200);
  expect(grown.json().spec).toEqual({ size: 32 });
  await eventually('grown event', async () =>
    (await api('GET', '/v0/volumes/data')).json().events.some((e: { message: string }) => e.message.startsWith('grown to 32 MB')) ? true : undefined,
  );
  if (loop) expect(fs.statSync(store.imagePath(volumeId)).size).toBe(32 * 1024 * 1024);

  await api('DELETE', '/v0/sandboxes/reader');
  await gone('sandboxes', 'reader');
  const del = await api('DELETE', '/v0/volumes/data');
  expect(del.statusCode).toBe(200);
  expect(del.json().status).toBe('DELETING');
  await gone('volumes', 'data');
  expect(fs.existsSync(store.imagePath(volumeId))).toBe(false);
  expect(fs.existsSync(store.mountPoint(volumeId))).toBe(false);

  const mine = await outboxEvents(t.app.pg, tenant.accountId, volumeId);
  expect(mine.length).toBeGreaterThan(0);
  for (const event of mine) {
    expect(event.billing_dimension).toBe('volume_storage_gbs');
    expect(Number(event.quantity)).toBeGreaterThan(0);
  }
}, 90_000);

test('a sandbox naming an unknown volume or a reserved mountPath is refused naming the field', async () => {
  const unknown = await api('POST', '/v0/sandboxes', { metadata: { name: 'lost' }, spec: mounting('nope') });
  expect(unknown.statusCode).toBe(400);
  expect(unknown.json().message).toContain('body.spec.volumes[0].name');

  await api('POST', '/v0/volumes', { metadata: { name: 'other' }, spec: { size: 4 } });
  await status('volumes', 'other', 'DEPLOYED');
  const reserved = await api('POST', '/v0/sandboxes', { metadata: { name: 'lost' }, spec: { volumes: [{ name: 'other', mountPath: '/proc/x' }] } });
  expect(reserved.statusCode).toBe(400);
  expect(reserved.json().message).toContain('body.spec.volumes[0].mountPath');
  expect((await api('GET', '/v0/sandboxes/lost')).statusCode).toBe(404);

  const tooBig = await api('POST', '/v0/volumes', { metadata: { name: 'huge' }, spec: { size: 2_000_000 } });
  expect(tooBig.statusCode).toBe(400);
  expect(tooBig.json().message).toContain('size');

  await api('DELETE', '/v0/volumes/other');
  await gone('volumes', 'other');
}, 60_000);

test('an unmounted image grows with its file system; the mount is reused and removed with the volume', async () => {
  if (store.loopUnavailable()) return; // folders have no size to check
  const id = randomUUID();
  const megabytes = async (dir: string) => {
    const stats = await fs.promises.statfs(dir);
    return (stats.blocks * stats.bsize) / 1024 / 1024;
  };
  expect(await store.create(id, 8)).toEqual({ kind: 'loop' });
  expect(await store.grow(id, 24)).toEqual({});
  const mounted = await store.ensureMounted(id);
  expect(await store.ensureMounted(id)).toBe(mounted);
  expect(await megabytes(mounted)).toBeGreaterThan(16);
  // Grown while mounted: online where the kernel allows, otherwise on the next mount.
  const online = await store.grow(id, 48);
  if (online.pending === undefined) expect(await megabytes(mounted)).toBeGreaterThan(32);
  await store.remove(id);
  expect(fs.existsSync(store.imagePath(id))).toBe(false);
  expect(fs.existsSync(mounted)).toBe(false);
});
