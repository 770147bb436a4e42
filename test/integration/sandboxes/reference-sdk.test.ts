import { SandboxInstance } from '@blaxel/core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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

describe('what runs commands underneath: fs.cp, and process wait, stop and streamLogs', () => {
  test('cp copies a tree inside the sandbox; download writes a file\'s bytes to the local disk', async () => {
    const sandbox = await deployed();
    await sandbox.fs.write('/tmp/sdk-cp/a/one.txt', 'one\n');
    await sandbox.fs.write('/tmp/sdk-cp/a/deeper/two.txt', 'two\n');
    expect(await sandbox.fs.cp('/tmp/sdk-cp/a', '/tmp/sdk-cp/b')).toMatchObject({ source: '/tmp/sdk-cp/a', destination: '/tmp/sdk-cp/b' });
    expect(await sandbox.fs.read('/tmp/sdk-cp/b/deeper/two.txt')).toBe('two\n');
    await expect(sandbox.fs.cp('/tmp/sdk-cp/missing', '/tmp/sdk-cp/c')).rejects.toThrow(/Could not copy/);

    const local = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-download-')), 'one.txt');
    await sandbox.fs.download('/tmp/sdk-cp/b/one.txt', local);
    expect(fs.readFileSync(local, 'utf8')).toBe('one\n');
    fs.rmSync(path.dirname(local), { recursive: true });
  });

  test('wait returns once the process ends; stop ends a running one', async () => {
    const sandbox = await deployed();
    await sandbox.process.exec({ name: 'brief', command: 'sleep 0.3; echo finished' });
    const waited = await sandbox.process.wait('brief', { maxWait: 30_000, interval: 50 });
    expect(waited).toMatchObject({ name: 'brief', status: 'completed', exitCode: 0 });
    expect(await sandbox.process.logs('brief', 'stdout')).toBe('finished\n');

    await sandbox.process.exec({ name: 'stoppable', command: 'sleep 300' });
    await sandbox.process.stop('stoppable');
    const stopped = await eventually('stoppable ended', async () => {
      const record = await sandbox.process.get('stoppable');
      return record.status === 'running' ? undefined : record;
    });
    expect(['stopped', 'killed']).toContain(stopped.status);
  });

  test('streamLogs delivers each line once, on the stream it was printed to, while the process runs', async () => {
    const sandbox = await deployed();
    // The command waits for a file the test writes only after the first line arrived.
    await sandbox.process.exec({ name: 'talker', command: 'echo first; while [ ! -e /tmp/sdk-go ]; do sleep 0.05; done; echo second; echo problem >&2' });
    const stdout: string[] = [];
    const stderr: string[] = [];
    let sawFirst: () => void = () => undefined;
    const first = new Promise<void>((resolve) => (sawFirst = resolve));
    const stream = sandbox.process.streamLogs('talker', {
      onStdout: (line) => {
        stdout.push(line);
        sawFirst();
      },
      onStderr: (line) => stderr.push(line),
    });
    await first;
    expect((await sandbox.process.get('talker')).status).toBe('running');
    await sandbox.fs.write('/tmp/sdk-go', '');
    await stream.wait();
    expect(stdout.map((line) => line.trim())).toEqual(['first', 'second']);
    expect(stderr.map((line) => line.trim())).toEqual(['problem']);
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
