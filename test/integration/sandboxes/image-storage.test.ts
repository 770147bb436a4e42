import fs from 'node:fs';
import path from 'node:path';
import type { Pool } from 'pg';
import { createSandboxNodeActivities } from '../../../activities/sandbox-node';
import { createPool } from '../../../store/postgres-pool';
import type { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import { exec, runtimeDataDir, sandboxSpec, testRuntime } from '../../helpers/sandbox-runtime';
import { testConfig } from '../../helpers/platform';

// Real sandboxes on a busy 2-core machine: generous limits; no test asserts on time.
jest.setTimeout(60_000);

const MiB = 1024 * 1024;
const dataDir = runtimeDataDir('image-storage');
let runtime: BwrapRuntime;
let pg: Pool;

beforeAll(() => {
  runtime = testRuntime(dataDir);
  // The measuring activity keeps a store it does not use here; no query reaches the database.
  pg = createPool(testConfig().databaseUrl);
});

afterAll(async () => {
  for (const sandbox of await runtime.list()) await runtime.remove(sandbox.id);
  await pg.end();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** Image storage of a sandbox as its lifecycle workflow measures it for billing, by a node that has not measured before. */
async function imageStorage(id: string): Promise<number> {
  const node = createSandboxNodeActivities({ runtime: testRuntime(dataDir), pg, nodeQueue: 'test-node' });
  const measured = await node.measureSandbox({ id, workspace: 'w', workspaceId: 'ws-test', name: 'box' }, 'base');
  return measured.imageBytes;
}

test("image storage is what the sandbox wrote to its own layer, not the host's system folders", async () => {
  const spec = sandboxSpec();
  const { socketPath } = await runtime.start(spec);

  // A new sandbox has written nothing: the built-in image is not stored by the platform.
  const fresh = await imageStorage(spec.id);
  expect(fresh).toBeLessThan(MiB);

  // What it writes to any of its writable folders counts, byte for byte (random bytes: nothing compresses).
  const written = await exec(socketPath, 'head -c 16777216 /dev/urandom > /home/user/blob && head -c 8388608 /dev/urandom > /tmp/scratch && sync');
  expect(written.exitCode).toBe(0);
  const grown = await imageStorage(spec.id);
  expect(Math.abs(grown - fresh - 24 * MiB)).toBeLessThanOrEqual(0.01 * 24 * MiB);

  // The operator installs software on the node: no sandbox's image storage changes.
  const installed = [path.join('/usr/local/lib', `hangar-image-test-${process.pid}`), path.join('/opt', `hangar-image-test-${process.pid}`)];
  try {
    for (const file of installed) fs.writeFileSync(file, Buffer.alloc(32 * MiB, 1));
    expect(await imageStorage(spec.id)).toBe(grown);
  } finally {
    for (const file of installed) fs.rmSync(file, { force: true });
  }

  // Deleting its files gives the space back.
  await exec(socketPath, 'rm /home/user/blob /tmp/scratch');
  expect(await imageStorage(spec.id)).toBeLessThan(MiB);
});
