import { SandboxInstance, getSandbox, updateSandbox } from '@blaxel/core';
import fc from 'fast-check';
import { unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { deployedSandbox as deployed, startReferenceSdkPlatform, type ReferenceSdkPlatform } from '../../helpers/reference-sdk';
import { eventually } from '../../helpers/workers';
import { ResourceStore } from '../../../store/resources';

// Managing sandboxes with the reference SDK (issue 16): createIfNotExists under concurrency, and
// updates (ttl, lifecycle, envs) that apply to the running sandbox without recreating it.
// Real sandboxes on a busy 2-core machine: generous limits; no test asserts on time.
jest.setTimeout(180_000);

let platform: ReferenceSdkPlatform;
let t: TestApp;
let tenant: TestTenant;

beforeAll(async () => {
  platform = await startReferenceSdkPlatform('sdk-manage');
  ({ t, tenant } = platform);
}, 90_000);

afterAll(() => platform?.stop(), 60_000);

const request = (name: string) => ({ metadata: { name }, spec: { runtime: { image: 'blaxel/base-image:latest', memory: 128 } } });

/** The sandbox's rows in the database, whatever their status. */
async function rowsNamed(name: string): Promise<{ id: string; created_at: Date }[]> {
  const { rows } = await t.app.pg.query(`SELECT r.id, r.created_at FROM resources r JOIN workspaces w ON w.id = r.workspace_id WHERE w.name = $1 AND r.kind = 'sandboxes' AND r.name = $2`, [
    tenant.workspace,
    name,
  ]);
  return rows;
}

/** The statuses the management API answered the SDK's creates with while `run` ran. */
async function recordingCreates<T>(run: () => Promise<T>): Promise<{ value: T; statuses: number[] }> {
  const statuses: number[] = [];
  const sdkFetch = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    // Read before sending: a Request's body is used up once sent.
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    const response = await sdkFetch(input, init);
    if (method === 'POST' && new URL(url).pathname === '/v0/sandboxes') statuses.push(response.status);
    return response;
  };
  try {
    return { value: await run(), statuses };
  } finally {
    globalThis.fetch = sdkFetch;
  }
}

describe('createIfNotExists', () => {
  test('concurrent calls for one name make one sandbox, and every caller gets that sandbox', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        // When each caller starts (ms after the first), and what of that name exists before.
        fc.array(fc.nat(40), { minLength: 2, maxLength: 5 }),
        fc.constantFrom('none' as const, 'living' as const, 'being deleted' as const),
        async (starts, before) => {
          const name = `cine-${++run}-${unique('x').slice(-6)}`.toLowerCase();
          const previous = before === 'none' ? undefined : await SandboxInstance.create(request(name));
          if (before === 'being deleted') await SandboxInstance.delete(name);
          const answers = await recordingCreates(() =>
            Promise.all(
              starts.map(async (delay) => {
                await new Promise((resolve) => setTimeout(resolve, delay));
                return SandboxInstance.createIfNotExists(request(name));
              }),
            ),
          );
          // The API hands the living sandbox back: no caller had to go through a 409. One being
          // deleted is a 409 until it is gone; the SDK waits for that, then creates.
          if (before !== 'being deleted') expect(answers.statuses).toEqual(starts.map(() => 200));
          const results = answers.value;
          const rows = await rowsNamed(name);
          expect(rows).toHaveLength(1);
          for (const sandbox of results) {
            expect(sandbox.metadata.name).toBe(name);
            expect(sandbox.metadata.createdAt).toBe(rows[0].created_at.toISOString());
          }
          // A sandbox whose deletion was asked for is never handed back: the callers get a new one.
          if (before === 'being deleted') expect(results[0].metadata.createdAt).not.toBe(previous?.metadata.createdAt);
          // And it starts: its lifecycle is its own, not the deleted one's finishing.
          await deployed(name, 60_000);
          await SandboxInstance.delete(name);
        },
      ),
      { numRuns: 8 },
    );
  });

  test('a FAILED sandbox of that name is replaced, as the reference does (its SDK creates again at once over one)', async () => {
    const name = unique('cine-failed').toLowerCase();
    const failed = await SandboxInstance.create(request(name));
    await deployed(name);
    // As a start that failed leaves it (the node's failure is not what is tried here).
    const [row] = await rowsNamed(name);
    await new ResourceStore(t.app.pg).transition(row.id, 'FAILED', { type: 'Warning', message: 'failed to start: injected' });

    const replaced = await SandboxInstance.createIfNotExists(request(name));
    expect(replaced.metadata.createdAt).not.toBe(failed.metadata.createdAt);
    const rows = await rowsNamed(name);
    expect(rows.map((r) => r.created_at.toISOString())).toEqual([replaced.metadata.createdAt]);
    await deployed(name);
    await SandboxInstance.delete(name);
  });

  test('a createIfNotExist query parameter that is not a boolean is a 400 naming it', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v0/sandboxes?createIfNotExist=maybe',
      headers: { authorization: `Bearer ${tenant.admin.apiKey}`, 'x-service-workspace': tenant.workspace },
      payload: request('cine-bad'),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toContain('createIfNotExist');
  });
});

describe('updates that keep the sandbox', () => {
  const name = unique('upd').toLowerCase();
  let keeperPid: string;

  beforeAll(async () => {
    const withEnv = request(name);
    await SandboxInstance.create({ ...withEnv, spec: { runtime: { ...withEnv.spec.runtime, envs: [{ name: 'GREETING', value: 'hello' }] } } });
    const sandbox = await deployed(name);
    await sandbox.fs.write('/tmp/kept.txt', 'still here\n');
    keeperPid = (await sandbox.process.exec({ command: 'sleep 600', name: 'keeper' })).pid!;
  });

  /** The sandbox was not recreated: the same process still runs, the file is still there. */
  async function expectKept(): Promise<SandboxInstance> {
    const sandbox = await deployed(name);
    const keeper = await sandbox.process.get('keeper');
    expect([keeper.pid, keeper.status]).toEqual([keeperPid, 'running']);
    expect(await sandbox.fs.read('/tmp/kept.txt')).toBe('still here\n');
    return sandbox;
  }

  test('updateTtl sets a ttl and clears it', async () => {
    const updated = await SandboxInstance.updateTtl(name, '3h');
    expect(updated.spec.runtime?.ttl).toBe('3h');
    expect(updated.expiresIn).toBeGreaterThan(3 * 3600 - 120);
    expect((await expectKept()).spec.runtime?.ttl).toBe('3h');

    const cleared = await SandboxInstance.updateTtl(name, '');
    expect(cleared.spec.runtime?.ttl ?? null).toBeNull();
    expect(cleared.expiresIn ?? null).toBeNull();
    await expectKept();
  });

  test('updateLifecycle sets expiration policies and clears them', async () => {
    const lifecycle = { expirationPolicies: [{ type: 'ttl-idle' as const, value: '45m', action: 'delete' as const }] };
    const updated = await SandboxInstance.updateLifecycle(name, lifecycle);
    expect(updated.spec.lifecycle).toEqual(lifecycle);
    expect(updated.expiresIn).toBeGreaterThan(40 * 60);
    expect((await expectKept()).spec.lifecycle).toEqual(lifecycle);

    const cleared = await SandboxInstance.updateLifecycle(name, null);
    expect(cleared.spec.lifecycle?.expirationPolicies ?? []).toEqual([]);
    expect(cleared.expiresIn ?? null).toBeNull();
    await expectKept();
  });

  test('envs updated as the reference does (the sandbox sent back with new envs): new processes see them, running ones keep theirs', async () => {
    const printGreeting = async (sandbox: SandboxInstance) =>
      ((await sandbox.process.exec({ command: 'printf %s "$GREETING"', waitForCompletion: true })) as { stdout?: string }).stdout;
    expect(await printGreeting(await expectKept())).toBe('hello');

    const envs = [{ name: 'GREETING', value: 'updated' }, { name: 'ADDED', value: 'yes' }];
    const { data: current } = await getSandbox({ path: { sandboxName: name }, throwOnError: true });
    const { data: updated } = await updateSandbox({
      path: { sandboxName: name },
      body: { ...current, spec: { ...current.spec, runtime: { ...current.spec.runtime, envs } } },
      throwOnError: true,
    });
    expect(updated.spec.runtime?.envs).toEqual(envs);

    const sandbox = await expectKept();
    await eventually('a new process to see the updated envs', async () => ((await printGreeting(sandbox)) === 'updated' ? true : undefined));
    const added = (await sandbox.process.exec({ command: 'printf %s "$ADDED"', waitForCompletion: true })) as { stdout?: string };
    expect(added.stdout).toBe('yes');
    // The process that ran before the update keeps the environment it started with.
    const keeperEnv = (await sandbox.process.exec({ command: `tr '\\0' '\\n' < /proc/${keeperPid}/environ | grep '^GREETING='`, waitForCompletion: true })) as { stdout?: string };
    expect(keeperEnv.stdout?.trim()).toBe('GREETING=hello');
  });

  test('a ttl the sandbox is already older than applies at once: the running lifecycle deletes it', async () => {
    await expectKept();
    await SandboxInstance.updateTtl(name, '1s');
    await eventually(`${name} deleted by its new ttl`, async () => {
      const gone = await SandboxInstance.get(name).then(
        (sandbox) => ['DELETING', 'TERMINATED'].includes(sandbox.status ?? ''),
        (err: { code?: number }) => err.code === 404,
      );
      return gone || undefined;
    }, 90_000);
  });
});
