import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import { exec, runtimeDataDir, sandboxSpec, testRuntime } from '../../helpers/sandbox-runtime';

// The node's side of a restore (BwrapRuntime.restoreFiles) on real sandboxes: a frozen one comes
// back running in the next freeze generation, a retried restore does not undo what came after
// it, a restore cut short between its renames is finished by the retry, and a snapshot whose
// files are gone changes nothing. Real sandboxes on a busy 2-core machine: no test asserts on time.
jest.setTimeout(90_000);

const dataDir = runtimeDataDir('restore');
let runtime: BwrapRuntime;

beforeAll(() => {
  runtime = testRuntime(dataDir);
});

afterAll(async () => {
  for (const sandbox of await runtime.list()) await runtime.remove(sandbox.id);
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function sandboxWithSnapshot(): Promise<{ id: string; snapshotId: string; run: (command: string) => Promise<string> }> {
  const spec = sandboxSpec();
  await runtime.start(spec);
  const run = async (command: string) => (await exec(runtime.socketPath(spec.id), command)).stdout;
  await run('echo v1 > /home/user/state.txt');
  const snapshotId = randomUUID();
  await runtime.captureFiles(spec.id, snapshotId);
  await run('echo v2 > /home/user/state.txt; echo later > /workspace/later.txt');
  return { id: spec.id, snapshotId, run };
}

test('a frozen sandbox restored comes back running, thawed into the next generation, with the snapshot files', async () => {
  const { id, snapshotId, run } = await sandboxWithSnapshot();
  const frozen = await runtime.freeze(id);
  expect(frozen.frozen).toBe(true);
  const after = await runtime.restoreFiles(id, snapshotId, 'restore-1');
  expect(after).toMatchObject({ generation: frozen.generation + 1, frozen: false, thawedAt: expect.any(Number) });
  expect(await runtime.freezeState(id)).toEqual(after);
  expect((await runtime.status(id))?.state).toBe('running');
  expect(await run('cat /home/user/state.txt; ls /workspace')).toBe('v1\n');
  // Its freeze cycles go on from there.
  expect((await runtime.freeze(id)).generation).toBe(after.generation);
});

test('a retried restore answers as the first did and keeps what was written since', async () => {
  const { id, snapshotId, run } = await sandboxWithSnapshot();
  const first = await runtime.restoreFiles(id, snapshotId, 'restore-a');
  const pid = (await runtime.status(id))?.pid;
  await run('echo after the restore > /home/user/state.txt');
  expect(await runtime.restoreFiles(id, snapshotId, 'restore-a')).toEqual(first);
  expect((await runtime.status(id))?.pid).toBe(pid);
  expect(await run('cat /home/user/state.txt')).toBe('after the restore\n');
  // A new request restores again.
  await runtime.restoreFiles(id, snapshotId, 'restore-b');
  expect(await run('cat /home/user/state.txt')).toBe('v1\n');
});

test('a restore cut short between its renames is finished by its retry', async () => {
  const { id, snapshotId, run } = await sandboxWithSnapshot();
  const fsRoot = runtime.layout(id).fsRoot;
  // What a worker dying after moving the old files aside leaves: no fs/, the old files beside, a
  // half-made copy.
  await runtime.stop(id);
  fs.renameSync(fsRoot, `${fsRoot}.replaced`);
  fs.mkdirSync(`${fsRoot}.restoring/home`, { recursive: true });
  await runtime.restoreFiles(id, snapshotId, 'restore-again');
  expect(await run('cat /home/user/state.txt; ls /workspace')).toBe('v1\n');
  expect(fs.readdirSync(path.dirname(fsRoot)).filter((name) => name.startsWith('fs.'))).toEqual([]);
});

test("a snapshot whose files are gone changes nothing: the sandbox runs on with its files", async () => {
  const { id, snapshotId, run } = await sandboxWithSnapshot();
  const pid = (await runtime.status(id))?.pid;
  await runtime.removeSnapshotFiles(snapshotId);
  await expect(runtime.restoreFiles(id, snapshotId, 'restore-gone')).rejects.toThrow(/snapshot's files are not on this node/);
  expect((await runtime.status(id))?.pid).toBe(pid);
  expect(await run('cat /home/user/state.txt /workspace/later.txt')).toBe('v2\nlater\n');
});
