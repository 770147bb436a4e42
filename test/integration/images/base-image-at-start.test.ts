import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sandboxLayout } from '../../../runtime/layout';
import type { SandboxRecord } from '../../../runtime/state-store';
import { NodeImageStore } from '../../../store/node-images';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { startSecondNode, warmSandboxIds, type SecondNode } from '../../helpers/second-node';
import { exec, sandboxSpec, testRuntime } from '../../helpers/sandbox-runtime';
import { standInMmdebstrap, type StandInMmdebstrap } from '../../helpers/stand-in-mmdebstrap';
import { eventually } from '../../helpers/workers';

// A node builds base-image, the default image, at its start, in the background: the built node
// worker (dist/workers/node.js, on a second host of its own data folder, which has no base-image
// yet) with the stand-in mmdebstrap first on its PATH, whose build takes seconds. The warm pool
// runs on base-image: it fills only once the image is built, each warm sandbox recording the
// digest it started on; a restart ends those of another build, and a take-over checks it.
jest.setTimeout(240_000);

let t: TestApp;
let tenant: TestTenant;
let standIn: StandInMmdebstrap;
let scratch: string;
let node: SecondNode | undefined;
const runtimes: ReturnType<typeof testRuntime>[] = [];

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('base-image-start') });
  tenant = await createTenant(t.app.pg, 'bistart');
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'hbs-'));
  standIn = standInMmdebstrap(path.join(scratch, 'tool'));
});

afterAll(async () => {
  await node?.stop();
  for (const runtime of runtimes) {
    for (const id of warmSandboxIds(path.join(scratch, 'node'))) await runtime.remove(id).catch(() => undefined);
    for (const sandbox of await runtime.list()) await runtime.remove(sandbox.id).catch(() => undefined);
    await runtime.close();
  }
  await t?.close();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

const api: ReturnType<typeof tenantResources>['api'] = (...args) => tenantResources(t, tenant).api(...args);
const readRecord = (dataDir: string, id: string): SandboxRecord => JSON.parse(fs.readFileSync(sandboxLayout(dataDir, id).stateFile, 'utf8'));
const writeRecord = (dataDir: string, record: SandboxRecord) => fs.writeFileSync(sandboxLayout(dataDir, record.spec.id).stateFile, JSON.stringify(record));
const STALE_DIGEST = `sha256:${'0'.repeat(64)}`;

/** The node's warm sandboxes once `count` of them run, none of them `without`, with their records. */
const runningWarm = (dataDir: string, count: number, without?: string) =>
  eventually(`${count} warm sandboxes running${without ? `, not ${without}` : ''}`, async () => {
    const ids = warmSandboxIds(dataDir);
    if (without !== undefined && ids.includes(without)) return undefined;
    const records = ids.map((id) => readRecord(dataDir, id));
    return records.length === count && records.every((r) => r.phase === 'running') ? records : undefined;
  }, 120_000);

test('the node worker builds base-image at its start (BUILDING, then READY); its warm pool fills after, on that build, and a restart ends warm sandboxes of another', async () => {
  // `/v0/images/base-image` shows every node's record together: only this test's node has one.
  await t.app.pg.query("DELETE FROM node_images WHERE name = 'base-image'");
  standIn.setDelay(5_000);
  node = await startSecondNode(t.config, t.app.pg, { ownImages: true, env: { PATH: `${path.dirname(standIn.path)}:${process.env.PATH}`, HANGAR_SANDBOX_WARM_POOL: '2' } });
  const tagOf = async () => (await api('GET', '/v0/images/base-image')).json().spec.tags[0];
  const ownRow = async () => (await new NodeImageStore(t.app.pg).list('base-image')).find((row) => row.node_id === node!.id);

  const building = await eventually('base-image BUILDING on the API', async () => ((await tagOf()).state === 'BUILDING' ? true : undefined), 60_000);
  expect(building).toBe(true);
  expect((await ownRow())?.state).toBe('BUILDING');
  // No sandbox asked for it: the worker's start did. Nothing warm while it builds.
  expect(standIn.runs()).toEqual({ started: 1, finished: 0 });
  const warmWhileBuilding: number[] = [];
  const ready = await eventually('base-image READY on the API', async () => {
    const tag = await tagOf();
    if (tag.state !== 'READY') warmWhileBuilding.push(warmSandboxIds(node!.dataDir).length);
    return tag.state === 'READY' && tag.digest ? tag : undefined;
  }, 120_000).catch((err: Error) => {
    throw new Error(`${err.message}; the node worker's output:\n${node!.log().slice(-3000)}`);
  });
  expect(warmWhileBuilding.length).toBeGreaterThan(0);
  expect(Math.max(...warmWhileBuilding)).toBe(0);
  expect(ready.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
  expect(ready.sizeBytes).toBeGreaterThan(0);
  expect(await ownRow()).toMatchObject({ state: 'READY', digest: ready.digest });

  const warm = await runningWarm(node.dataDir, 2);
  expect(warm.map((r) => [r.spec.image, r.imageDigest])).toEqual([
    ['base-image', ready.digest],
    ['base-image', ready.digest],
  ]);

  // Killed (its warm sandboxes keep running); one of them is made to look started on an older build.
  await node.crash();
  const [stale, kept] = warm;
  writeRecord(node.dataDir, { ...stale, imageDigest: STALE_DIGEST });
  await node.restart();
  // The restarted worker finds base-image and ends the stale one, keeps the other and starts one more.
  const after = await runningWarm(node.dataDir, 2, stale.spec.id).catch((err: Error) => {
    throw new Error(`${err.message}; the node worker's output:\n${node!.log().slice(-3000)}`);
  });
  expect(after.map((r) => r.spec.id)).toContain(kept.spec.id);
  expect(fs.existsSync(sandboxLayout(node.dataDir, stale.spec.id).root)).toBe(false);
  expect(after.every((r) => r.imageDigest === ready.digest)).toBe(true);
  // Found at the restart, not built again.
  expect(standIn.runs()).toEqual({ started: 1, finished: 1 });
  expect((await ownRow())?.state).toBe('READY');
});

test("a take-over checks the warm sandbox's image digest: one of another build is not handed out", async () => {
  const dataDir = path.join(scratch, 'node');
  const runtime = testRuntime(dataDir, { warmPool: 1, images: { mmdebstrapPath: standIn.path } });
  runtimes.push(runtime);
  standIn.setDelay(0);
  // No base-image on the node yet: the pool starts nothing.
  await runtime.prewarm();
  expect(runtime.warmPoolStatus()).toEqual({ ready: 0, starting: 0, lastError: undefined });
  const image = await runtime.ensureBaseImage();
  await runtime.prewarm();
  const [first] = await runningWarm(dataDir, 1);
  expect(first.imageDigest).toBe(image.digest);

  // The same build: taken over (its folder becomes the new sandbox's).
  const taken = await runtime.start(sandboxSpec({ image: 'base-image', memoryMb: 128 }));
  expect(fs.existsSync(sandboxLayout(dataDir, first.spec.id).root)).toBe(false);
  expect(runtime.warmPoolStatus().lastError).toBeUndefined();
  expect((await exec(taken.socketPath, 'cat /etc/debian_version')).stdout).toBe('stand-in\n');

  // Another build: refused, removed, and the sandbox starts from nothing on the current one.
  const [second] = await runningWarm(dataDir, 1);
  writeRecord(dataDir, { ...second, imageDigest: STALE_DIGEST });
  const cold = await runtime.start(sandboxSpec({ image: 'base-image', memoryMb: 128 }));
  expect(runtime.warmPoolStatus().lastError).toBe('take-over failed: the warm sandbox was started on another build of base-image');
  expect(fs.existsSync(sandboxLayout(dataDir, second.spec.id).root)).toBe(false);
  expect(readRecord(dataDir, cold.id).imageDigest).toBe(image.digest);
  expect((await exec(cold.socketPath, 'cat /etc/debian_version')).stdout).toBe('stand-in\n');
});
