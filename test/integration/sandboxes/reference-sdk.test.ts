import { SandboxInstance } from '@blaxel/core';
import { unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { deployedSandbox, startReferenceSdkPlatform, type ReferenceSdkPlatform } from '../../helpers/reference-sdk';
import { eventually } from '../../helpers/workers';

// Hangar driven by the reference service's own SDK, unchanged but for header names and base URLs
// (test/helpers/reference-sdk.ts): SandboxInstance, fs and process basics. The other
// reference-sdk-*.test.ts files cover the rest of the surface, one capability each.
// Real sandboxes on a busy 2-core machine: generous limits; no test asserts on time.
jest.setTimeout(90_000);

let hangar: ReferenceSdkPlatform | undefined;
let t: TestApp;
let tenant: TestTenant;

const name = unique('sdk');
const createRequest = { metadata: { name }, spec: { runtime: { image: 'hangar/base:latest', memory: 256 } } };

beforeAll(async () => {
  hangar = await startReferenceSdkPlatform('sdk');
  ({ t, tenant } = hangar);
}, 90_000);

afterAll(async () => {
  await hangar?.stop();
}, 60_000);

const deployed = () => deployedSandbox(name);

describe('SandboxInstance', () => {
  test('create returns the sandbox Hangar made; get and list find it in this workspace', async () => {
    const created = await SandboxInstance.create(createRequest);
    expect(created.metadata.name).toBe(name);
    expect(created.metadata.url).toBe(`http://${t.config.host}:${t.config.sandboxPort}/${tenant.workspace}/${name}`);
    expect(created.spec.runtime?.memory).toBe(256);

    const sandbox = await deployed();
    expect(sandbox.metadata.name).toBe(name);
    expect(sandbox.metadata.workspace).toBe(tenant.workspace);

    const page = await SandboxInstance.list();
    expect(page.data.map((s) => s.metadata.name)).toEqual([name]);
  });

  test('updateMetadata changes the labels and display name, and get reads them back', async () => {
    const updated = await SandboxInstance.updateMetadata(name, { labels: { team: 'sdk' }, displayName: 'SDK box' });
    expect(updated.metadata).toMatchObject({ name, labels: { team: 'sdk' }, displayName: 'SDK box' });
    expect((await SandboxInstance.get(name)).metadata).toMatchObject({ labels: { team: 'sdk' }, displayName: 'SDK box' });
  });
});

describe('fs', () => {
  test('write, read, mkdir, ls and rm of small files', async () => {
    const sandbox = await deployed();
    await sandbox.fs.mkdir('/tmp/sdk/empty');
    expect((await sandbox.fs.write('/tmp/sdk/hello.txt', 'hello from the reference SDK\n')).path).toBe('/tmp/sdk/hello.txt');
    expect(await sandbox.fs.read('/tmp/sdk/hello.txt')).toBe('hello from the reference SDK\n');

    const listing = await sandbox.fs.ls('/tmp/sdk');
    expect(listing.path).toBe('/tmp/sdk');
    expect(listing.files?.map((f) => [f.name, f.size])).toEqual([['hello.txt', 29]]);
    expect(listing.subdirectories?.map((d) => d.name)).toEqual(['empty']);

    await sandbox.fs.rm('/tmp/sdk/hello.txt');
    await expect(sandbox.fs.read('/tmp/sdk/hello.txt')).rejects.toThrow(/404/);
    expect((await sandbox.fs.ls('/tmp/sdk')).files).toEqual([]);
  });
});

describe('process', () => {
  test('exec waits for completion; get and logs give the record and the output back', async () => {
    const sandbox = await deployed();
    const done = await sandbox.process.exec({ name: 'greet', command: 'echo out-line; echo err-line >&2; exit 3', waitForCompletion: true });
    expect(done).toMatchObject({ name: 'greet', status: 'failed', exitCode: 3 });

    expect(await sandbox.process.get('greet')).toMatchObject({ name: 'greet', exitCode: 3, command: 'echo out-line; echo err-line >&2; exit 3' });
    expect(await sandbox.process.logs('greet', 'stdout')).toBe('out-line\n');
    expect(await sandbox.process.logs('greet', 'stderr')).toBe('err-line\n');
    expect((await sandbox.process.list()).map((p) => [p.name, p.exitCode])).toEqual([['greet', 3]]);
  });

  test('kill ends a running process', async () => {
    const sandbox = await deployed();
    const started = await sandbox.process.exec({ name: 'sleeper', command: 'sleep 300' });
    expect(started).toMatchObject({ name: 'sleeper', status: 'running' });
    await sandbox.process.kill('sleeper');
    const ended = await eventually('sleeper ended', async () => {
      const record = await sandbox.process.get('sleeper');
      return record.status === 'running' ? undefined : record;
    });
    expect(ended.status).toBe('killed');
  });
});

describe('delete', () => {
  test('delete removes the sandbox: get answers 404 once it is gone and list no longer has it', async () => {
    await deployed();
    const deleted = await SandboxInstance.delete(name);
    expect(deleted.metadata.name).toBe(name);
    await eventually(`${name} gone`, async () => {
      try {
        await SandboxInstance.get(name);
        return undefined;
      } catch (err) {
        return /404|not found/i.test(String((err as { message?: string }).message ?? JSON.stringify(err))) ? true : undefined;
      }
    }, 60_000);
    expect((await SandboxInstance.list()).data).toEqual([]);
  });
});
