import { SandboxInstance, Snapshot } from '@blaxel/core';
import fc from 'fast-check';
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { captureOnRequest } from '../../../activities/snapshot-node';
import { CaptureNotices } from '../../../api/management/snapshots/capture-notices';
import { removeOrphanedSnapshotFiles } from '../../../runtime/orphaned-snapshots';
import { SNAPSHOT_SETTLED_CHANNEL, SandboxSnapshotStore } from '../../../store/sandbox-snapshots';
import { createTenant, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { deployedSandbox, startReferenceSdkPlatform, type ReferenceSdkPlatform } from '../../helpers/reference-sdk';
import { eventually } from '../../helpers/workers';

// Snapshots and forks of sandboxes through the reference SDK (issue 18): a fork has the source's
// files as of the fork and its own afterwards; snapshots outlive their sandbox; forks outlive both.
// Real sandboxes on a busy 2-core machine: generous limits; no test asserts on time.
jest.setTimeout(180_000);

let platform: ReferenceSdkPlatform;
let t: TestApp;
let tenant: TestTenant;

beforeAll(async () => {
  platform = await startReferenceSdkPlatform('sdk-snapshots');
  ({ t, tenant } = platform);
}, 90_000);

afterAll(() => platform?.stop(), 60_000);

async function source(envs: { name: string; value: string }[] = []): Promise<SandboxInstance> {
  const name = unique('src');
  await SandboxInstance.create({ name, image: 'blaxel/base-image:latest', memory: 256, envs });
  return deployedSandbox(name);
}

const run = async (sandbox: SandboxInstance, command: string) => (await sandbox.process.exec({ command, waitForCompletion: true })).logs ?? '';

/** The management API answered directly, for what the SDK would not send; as `as`, the SDK's tenant by default. */
async function call(method: string, route: string, body?: unknown, as: TestTenant = tenant): Promise<{ status: number; json: any }> {
  const response = await t.app.inject({
    method: method as 'POST',
    url: route,
    headers: { authorization: `Bearer ${as.admin.apiKey}`, 'x-service-workspace': as.workspace, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  return { status: response.statusCode, json: response.json() };
}

test("a fork has the source's files and envs as of the fork, then each goes its own way; the source runs on", async () => {
  const src = await source([
    { name: 'KEPT', value: 'source' },
    { name: 'CHANGED', value: 'source' },
  ]);
  await src.fs.write('/home/user/notes.txt', 'before the fork');
  await src.fs.mkdir('/workspace/project');
  await src.fs.write('/workspace/project/main.py', 'print(42)\n');
  const bytes = Buffer.alloc(3 * 1024 * 1024, 7);
  await src.fs.writeBinary('/workspace/data.bin', bytes);

  const forkName = unique('fork');
  const result = await src.fork(forkName, { envs: [{ name: 'CHANGED', value: 'fork' }, { name: 'ADDED', value: 'fork' }] });
  expect(result).toEqual({ name: forkName, snapshotId: expect.stringMatching(/^[0-9a-f-]{36}$/), type: 'sandbox' });
  // Written after the fork answered: not the fork's.
  await src.fs.write('/home/user/notes.txt', 'after the fork');
  await src.fs.write('/home/user/later.txt', 'later');

  const fork = await deployedSandbox(forkName);
  expect(await fork.fs.read('/home/user/notes.txt')).toBe('before the fork');
  expect(await run(fork, 'python3 /workspace/project/main.py')).toBe('42\n');
  expect(Buffer.from(await (await fork.fs.readBinary('/workspace/data.bin')).arrayBuffer()).equals(bytes)).toBe(true);
  expect(await run(fork, 'test -e /home/user/later.txt && echo present || echo absent')).toBe('absent\n');
  // Owners and modes as they were: the sandbox user's files stay the sandbox user's.
  expect(await run(fork, 'stat -c %U /home/user/notes.txt /workspace/project')).toBe('user\nuser\n');
  expect(await run(fork, 'echo $KEPT $CHANGED $ADDED')).toBe('source fork fork\n');
  expect(fork.spec.runtime?.memory).toBe(256);

  await fork.fs.write('/home/user/notes.txt', 'the fork wrote this');
  expect(await src.fs.read('/home/user/notes.txt')).toBe('after the fork');
  expect(await run(src, 'echo $CHANGED; test -e /home/user/later.txt && echo present')).toBe('source\npresent\n');
  // The capture the fork made is a snapshot of the workspace, captured from the source.
  expect((await src.snapshots.list()).map((s) => s.id)).toContain(result.snapshotId);
});

test('snapshots outlive their sandbox, forks outlive both; a deleted snapshot leaves no files', async () => {
  const src = await source();
  await src.fs.write('/home/user/state.txt', 'version 1');
  const snapshot = await src.snapshots.create(unique('snap'));
  expect(snapshot.status).toBe('ready');
  expect(snapshot.source).toEqual({ name: src.metadata.name, kind: 'sandbox', deleted: false });
  await src.fs.write('/home/user/state.txt', 'version 2');

  // From the snapshot, both ways the SDK has: the snapshot's fork and the sandbox's with snapshotId.
  const [viaSnapshot, viaSandbox] = [unique('from-snap'), unique('from-id')];
  await (await Snapshot.get(snapshot.id)).fork(viaSnapshot);
  await src.fork(viaSandbox, { snapshotId: snapshot.id });
  for (const name of [viaSnapshot, viaSandbox]) expect(await (await deployedSandbox(name)).fs.read('/home/user/state.txt')).toBe('version 1');

  await SandboxInstance.delete(src.metadata.name);
  const kept = await eventually('the source gone', async () => {
    const found = await Snapshot.get(snapshot.id);
    return found.source?.deleted ? found : undefined;
  });
  expect(kept.status).toBe('ready');
  // A new sandbox from the snapshot of a deleted sandbox.
  const late = unique('late');
  await kept.fork(late);
  expect(await (await deployedSandbox(late)).fs.read('/home/user/state.txt')).toBe('version 1');

  const files = path.join(t.config.dataDir, 'snapshots', snapshot.id);
  expect(fs.existsSync(files)).toBe(true);
  await Snapshot.delete(snapshot.id);
  expect((await Snapshot.list()).data.map((s) => s.id)).not.toContain(snapshot.id);
  await eventually('the snapshot files removed', async () => (fs.existsSync(files) ? undefined : true));
  // Its forks keep their own files.
  expect(await (await SandboxInstance.get(viaSnapshot)).fs.read('/home/user/state.txt')).toBe('version 1');
});

describe('bad input: 4xx naming what is wrong', () => {
  let src: SandboxInstance;
  beforeAll(async () => {
    src = await source();
  });

  test('fork targets: an application, its fields, a bad or taken name', async () => {
    const fork = (body: Record<string, unknown>) => call('POST', `/v0/sandboxes/${src.metadata.name}/fork`, body);
    expect(await fork({ targetName: unique('app'), targetType: 'application' })).toMatchObject({ status: 400, json: { message: expect.stringContaining('body.targetType') } });
    for (const field of ['port', 'traffic']) {
      expect(await fork({ targetName: unique('x'), [field]: 8080 })).toMatchObject({ status: 400, json: { message: expect.stringContaining(`body.${field}`) } });
    }
    expect(await fork({ targetName: 'Not A Name' })).toMatchObject({ status: 400, json: { message: expect.stringContaining('targetName') } });
    expect(await fork({})).toMatchObject({ status: 400, json: { message: expect.stringContaining('targetName') } });
    expect(await fork({ targetName: src.metadata.name })).toMatchObject({ status: 409 });
  });

  test('unknown sources and snapshots are 404s, a taken snapshot name a 409, a missing source a 400', async () => {
    expect((await call('POST', `/v0/sandboxes/${unique('nobody')}/fork`, { targetName: unique('x') })).status).toBe(404);
    expect(await call('POST', `/v0/sandboxes/${src.metadata.name}/fork`, { targetName: unique('x'), snapshotId: 'no-such-snapshot' })).toMatchObject({
      status: 404,
      json: { message: expect.stringContaining('no-such-snapshot') },
    });
    expect((await call('POST', '/v0/snapshots/no-such-snapshot/fork', { targetName: unique('x') })).status).toBe(404);
    expect(await call('POST', '/v0/snapshots', { name: unique('s') })).toMatchObject({ status: 400, json: { message: expect.stringContaining('body.source') } });
    expect((await call('POST', '/v0/snapshots', { source: { name: unique('nobody') } })).status).toBe(404);
    const name = unique('taken');
    expect((await call('POST', '/v0/snapshots', { name, source: { name: src.metadata.name } })).json.status).toBe('ready');
    expect(await call('POST', '/v0/snapshots', { name, source: { name: src.metadata.name } })).toMatchObject({ status: 409, json: { message: expect.stringContaining(name) } });
    expect((await call('GET', `/v0/snapshots/${unique('nothing')}`)).status).toBe(404);
    // Another sandbox's snapshot is not this sandbox's to delete.
    expect((await call('DELETE', `/v0/sandboxes/${unique('other')}/snapshots/${name}`)).status).toBe(404);
    expect((await call('GET', `/v0/snapshots/${name}`)).status).toBe(200);
  });
});

test("another workspace neither sees nor forks nor deletes a workspace's snapshots", async () => {
  const src = await source();
  const snapshot = await src.snapshots.create(unique('private'));
  const other = await createTenant(t.app.pg, 'other');
  for (const key of [snapshot.id, snapshot.name]) {
    expect((await call('GET', `/v0/snapshots/${key}`, undefined, other)).status).toBe(404);
    expect((await call('POST', `/v0/snapshots/${key}/fork`, { targetName: unique('steal') }, other)).status).toBe(404);
    expect((await call('DELETE', `/v0/snapshots/${key}`, undefined, other)).status).toBe(404);
  }
  expect((await call('GET', '/v0/snapshots', undefined, other)).json).toEqual([]);
  expect((await call('GET', `/v0/sandboxes/${src.metadata.name}/snapshots`, undefined, other)).json).toEqual([]);
  expect((await call('GET', `/v0/snapshots/${snapshot.id}`)).json.status).toBe('ready');
});

test('forks racing the deletion of their snapshot: each fork has the files or fails saying why, and the files go', async () => {
  const src = await source();
  await src.fs.write('/home/user/marker.txt', 'from the snapshot');
  let round = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(fc.nat(60), { minLength: 1, maxLength: 3 }), fc.nat(200), async (forkDelays, deleteDelay) => {
      const snapshot = await src.snapshots.create(unique(`race${round++}`));
      const names = forkDelays.map(() => unique('racer'));
      const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
      const forks = forkDelays.map((ms, i) => later(ms).then(() => call('POST', `/v0/snapshots/${snapshot.id}/fork`, { targetName: names[i] })));
      const deletion = later(deleteDelay).then(() => call('DELETE', `/v0/snapshots/${snapshot.id}`));
      const answers = await Promise.all(forks);
      expect((await deletion).status).toBe(200);
      for (const [i, answer] of answers.entries()) {
        // Refused: the snapshot was already going when the fork looked.
        if (answer.status !== 200) {
          expect(answer).toMatchObject({ status: 404 });
          continue;
        }
        const settled = await eventually(`${names[i]} settled`, async () => {
          const got = await call('GET', `/v0/sandboxes/${names[i]}`);
          return ['DEPLOYED', 'FAILED'].includes(got.json.status) ? got.json : undefined;
        });
        if (settled.status === 'DEPLOYED') expect(await (await SandboxInstance.get(names[i])).fs.read('/home/user/marker.txt')).toBe('from the snapshot');
        else expect(JSON.stringify(settled.events)).toMatch(/snapshot's files are not on this node/);
        await SandboxInstance.delete(names[i]);
      }
      await eventually('the snapshot files removed', async () => (fs.existsSync(path.join(t.config.dataDir, 'snapshots', snapshot.id)) ? undefined : true));
    }),
    { numRuns: Number(process.env.HANGAR_INTERLEAVING_RUNS ?? 6), ...(process.env.HANGAR_INTERLEAVING_SEED ? { seed: Number(process.env.HANGAR_INTERLEAVING_SEED) } : {}) },
  );
});

test("a fork whose snapshot's files went before it started fails at once, saying so", async () => {
  const src = await source();
  const snapshot = await src.snapshots.create(unique('gone'));
  // What a deletion that wins the race leaves for the fork's start: no files.
  fs.rmSync(path.join(t.config.dataDir, 'snapshots', snapshot.id), { recursive: true, force: true });
  const name = unique('orphan');
  expect((await call('POST', `/v0/snapshots/${snapshot.id}/fork`, { targetName: name })).status).toBe(200);
  const failed = await eventually(`${name} FAILED`, async () => {
    const got = await call('GET', `/v0/sandboxes/${name}`);
    return got.json.status === 'FAILED' ? got.json : undefined;
  });
  expect(JSON.stringify(failed.events)).toMatch(/snapshot's files are not on this node/);
});

test("a capture's outcome is announced as the node settles it, and that ends the API's wait; a snapshot being deleted announces nothing", async () => {
  const store = new SandboxSnapshotStore(t.app.pg);
  const notices = new CaptureNotices(t.app.pg);
  const pending = async () => {
    const id = randomUUID();
    const row = { id, workspaceId: tenant.workspaceId, name: unique('announced'), sourceId: randomUUID(), sourceName: 'gone', sourceSpec: {}, nodeQueue: 'none', actor: 'test' };
    await store.insert(row);
    return id;
  };
  try {
    const [going, ready, failed] = [await pending(), await pending(), await pending()];
    const waits = await Promise.all([going, ready, failed].map((id) => notices.expect(id)));
    const heard = waits.map((wait) => wait.settled.then(() => true));
    await store.markDeleting(going);
    await store.settle(going, { status: 'ready', sizeBytes: 1 });
    await store.settle(ready, { status: 'ready', sizeBytes: 1 });
    expect(await heard[1]).toBe(true);
    await store.settle(failed, { status: 'failed', message: 'no' });
    expect(await heard[2]).toBe(true);
    // Notices arrive in commit order on one connection: had the deleting one's been sent, it
    // would have come before the others'.
    expect(await Promise.race([heard[0], Promise.resolve(false)])).toBe(false);
    for (const wait of waits) wait.done();
  } finally {
    await notices.close();
  }
});

test("captures whose notice is lost (the API's listening connection cut at generated moments) still answer, from their workflow", async () => {
  const src = await source();
  await src.fs.write('/home/user/kept.txt', 'captured');
  const listeners = () => t.app.pg.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE query = $1', [`LISTEN ${SNAPSHOT_SETTLED_CHANNEL}`]);
  await fc.assert(
    fc.asyncProperty(fc.nat(400), async (cutAfterMs) => {
      const capture = call('POST', `/v0/sandboxes/${src.metadata.name}/snapshots`, {});
      await new Promise((resolve) => setTimeout(resolve, cutAfterMs));
      for (const { pid } of (await listeners()).rows) await t.app.pg.query('SELECT pg_terminate_backend($1)', [pid]);
      const answer = await capture;
      expect(answer).toMatchObject({ status: 200, json: { status: 'ready' } });
      expect(answer.json.sizeBytes).toBeGreaterThan(0);
      expect(fs.readFileSync(path.join(t.config.dataDir, 'snapshots', answer.json.id, 'fs', 'home', 'kept.txt'), 'utf8')).toBe('captured');
    }),
    { numRuns: Number(process.env.HANGAR_INTERLEAVING_RUNS ?? 6), ...(process.env.HANGAR_INTERLEAVING_SEED ? { seed: Number(process.env.HANGAR_INTERLEAVING_SEED) } : {}) },
  );
  // And the API listens again: a later capture is answered by its notice as before.
  await eventually('the API listening again', async () => ((await listeners()).rows.length === 1 ? true : undefined));
});

test("the node copies a new snapshot on its announcement alone, no workflow asking; a copy whose snapshot went meanwhile leaves no files", async () => {
  const src = await source();
  await src.fs.write('/home/user/early.txt', 'copied early');
  const { rows } = await t.app.pg.query<{ id: string }>("SELECT id FROM resources WHERE kind = 'sandboxes' AND name = $1", [src.metadata.name]);
  const store = new SandboxSnapshotStore(t.app.pg);
  // No worker polls this queue: only the announcement can have the node copy.
  const nodeQueue = `announced-only-${randomUUID()}`;
  const filesOf = (id: string) => path.join(t.config.dataDir, 'snapshots', id);
  await fc.assert(
    fc.asyncProperty(fc.constantFrom('kept' as const, 'deleted' as const, 'row removed' as const), fc.nat(60), async (fate, afterMs) => {
      const listening = await captureOnRequest({ runtime: platform.runtime, pg: t.app.pg, nodeQueue });
      try {
        await announcedCapture(fate, afterMs, listening);
      } finally {
        // Its listening connection is the pool's until then.
        await listening.close();
      }
    }),
    { numRuns: Number(process.env.HANGAR_INTERLEAVING_RUNS ?? 6) * 2, ...(process.env.HANGAR_INTERLEAVING_SEED ? { seed: Number(process.env.HANGAR_INTERLEAVING_SEED) } : {}) },
  );

  async function announcedCapture(fate: 'kept' | 'deleted' | 'row removed', afterMs: number, listening: { close(): Promise<void> }): Promise<void> {
    const id = randomUUID();
    await store.insert({ id, workspaceId: tenant.workspaceId, name: unique('announced'), sourceId: rows[0].id, sourceName: src.metadata.name, sourceSpec: {}, nodeQueue, actor: 'test' });
    if (fate === 'kept') {
      const ready = await eventually(`${id} ready`, async () => {
        const row = await store.byId(id);
        return row?.status === 'ready' ? row : undefined;
      });
      expect(Number(ready.size_bytes)).toBeGreaterThan(0);
      expect(fs.readFileSync(path.join(filesOf(id), 'fs', 'home', 'early.txt'), 'utf8')).toBe('copied early');
    }
    await new Promise((resolve) => setTimeout(resolve, afterMs));
    if (fate === 'row removed') {
      // As the API does when the snapshot's workflow could not be started.
      await store.delete(id);
    } else {
      // As the snapshot's workflow deletes: marked, files removed, row deleted.
      await store.markDeleting(id);
      await platform.runtime.removeSnapshotFiles(id);
      await store.delete(id);
    }
    // The copies under way end first (closing twice is fine).
    await listening.close();
    // A copy settled before its row was removed outlives it until the node's start clears it.
    if (fate === 'row removed') await removeOrphanedSnapshotFiles(platform.runtime, t.app.pg, t.config.dataDir);
    expect(fs.existsSync(filesOf(id))).toBe(false);
  }
});
