import { SandboxInstance } from '@blaxel/core';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { unique, type TestTenant } from '../../helpers/platform';
import { deployedSandbox, startReferenceSdkPlatform, type ReferenceSdkPlatform } from '../../helpers/reference-sdk';
import { eventually } from '../../helpers/workers';

// Big files and file trees through the reference SDK (issue 16): fs.write above 5 MB goes through
// /filesystem-multipart, fs.writeTree through PUT /filesystem/tree. The refusals the SDK never
// provokes itself are sent as raw HTTP to the same sandbox URL, through the same gateway.
jest.setTimeout(180_000);

let hangar: ReferenceSdkPlatform | undefined;
let tenant: TestTenant;
let sandbox: SandboxInstance;

const name = unique('sdkfiles');
const MiB = 1024 * 1024;

beforeAll(async () => {
  hangar = await startReferenceSdkPlatform('sdkfiles');
  tenant = hangar.tenant;
  await SandboxInstance.create({ metadata: { name }, spec: { runtime: { image: 'hangar/base:latest', memory: 512 } } });
  sandbox = await deployedSandbox(name);
}, 180_000);

afterAll(async () => {
  await hangar?.stop();
}, 60_000);

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/** The file's bytes as the SDK downloads them. */
async function readBack(path: string): Promise<Buffer> {
  return Buffer.from(await (await sandbox.fs.readBinary(path)).arrayBuffer());
}

/** A raw call to the sandbox API, at the sandbox's URL and with the workspace admin's key, as any HTTP client would make it. */
async function raw(method: string, path: string, body?: { json?: unknown; form?: FormData }) {
  const headers: Record<string, string> = { authorization: `Bearer ${tenant.admin.apiKey}` };
  if (body?.json !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${sandbox.metadata.url}${path}`, { method, headers, body: body?.form ?? (body?.json !== undefined ? JSON.stringify(body.json) : undefined) });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

const partForm = (data: Buffer) => {
  const form = new FormData();
  form.append('file', new Blob([data]), 'part.bin');
  return form;
};

async function initiate(path: string): Promise<string> {
  const started = await raw('POST', `/filesystem-multipart/initiate${path}`, { json: {} });
  expect(started).toMatchObject({ status: 200, json: { uploadId: expect.any(String), path } });
  return started.json!.uploadId as string;
}

describe('fs.write of big files goes through multipart upload', () => {
  test('6 MB of text written by fs.write reads back byte for byte, and leaves no upload behind', async () => {
    const text = 'hangar multipart line\n'.repeat(Math.ceil((6 * MiB) / 22)).slice(0, 6 * MiB + 7);
    const written = await sandbox.fs.write('/home/user/six.txt', text);
    expect(written).toMatchObject({ path: '/home/user/six.txt' });
    const back = await readBack('/home/user/six.txt');
    expect(back.length).toBe(Buffer.byteLength(text));
    expect(sha256(back)).toBe(sha256(text));
    expect(await raw('GET', '/filesystem-multipart')).toEqual({ status: 200, json: { uploads: [] } });
    // The parts' data file, kept beside the target while the upload runs, became the file.
    expect((await sandbox.fs.ls('/home/user')).files?.map((f) => f.name)).toEqual(['six.txt']);
  });

  test('50 MB written by fs.write reads back byte for byte', async () => {
    const text = randomBytes(Math.ceil((50 * MiB * 3) / 4)).toString('base64').slice(0, 50 * MiB);
    await sandbox.fs.write('/workspace/fifty.b64', text);
    const back = await readBack('/workspace/fifty.b64');
    expect(back.length).toBe(50 * MiB);
    expect(sha256(back)).toBe(sha256(text));
  });

  test('7 MB of random bytes written by fs.writeBinary read back byte for byte, with mode 0644', async () => {
    const bytes = randomBytes(7 * MiB + 3);
    await sandbox.fs.writeBinary('/tmp/seven.bin', bytes);
    expect(sha256(await readBack('/tmp/seven.bin'))).toBe(sha256(bytes));
    const listing = await sandbox.fs.ls('/tmp');
    expect(listing.files?.find((f) => f.name === 'seven.bin')).toMatchObject({ size: bytes.length, permissions: '644' });
  });
});

describe('fs.writeTree and the tree routes', () => {
  test('writeTree writes every file below the folder; ls and read find them', async () => {
    const directory = await sandbox.fs.writeTree(
      [
        { path: 'README.md', content: '# tree\n' },
        { path: 'src/index.ts', content: 'export {};\n' },
        { path: 'src/lib/util.ts', content: 'export const one = 1;\n' },
      ],
      '/home/user/project',
    );
    expect(directory).toMatchObject({ path: '/home/user/project', files: [expect.objectContaining({ name: 'README.md' })], subdirectories: [expect.objectContaining({ name: 'src' })] });
    const src = await sandbox.fs.ls('/home/user/project/src');
    expect(src.files?.map((f) => f.name)).toEqual(['index.ts']);
    expect(src.subdirectories?.map((d) => d.name)).toEqual(['lib']);
    expect(await sandbox.fs.read('/home/user/project/src/lib/util.ts')).toBe('export const one = 1;\n');
  });

  test('DELETE /filesystem/tree/{path} as the SDK\'s client sends it removes the folder; without recursive a non-empty one stays', async () => {
    await sandbox.fs.writeTree([{ path: 'a/b.txt', content: 'b' }], '/tmp/doomed');
    const remove = (recursive: boolean) =>
      sandbox.fs.client.delete({ url: '/filesystem/tree/{path}', path: { path: 'tmp/doomed' }, query: { recursive }, baseUrl: sandbox.fs.url });
    const refused = await remove(false);
    expect(refused.response.status).toBe(400);
    expect(refused.error).toEqual({ error: expect.stringMatching(/not empty/) });
    expect(await sandbox.fs.read('/tmp/doomed/a/b.txt')).toBe('b');

    const removed = await remove(true);
    expect(removed.response.status).toBe(200);
    expect(removed.data).toEqual({ path: '/tmp/doomed', message: 'Directory deleted' });
    await expect(sandbox.fs.ls('/tmp/doomed')).rejects.toThrow(/404/);
  });

  test('a tree key that leaves the folder is refused by name, and nothing is written', async () => {
    const res = await raw('PUT', '/filesystem/tree/tmp/escape', { json: { files: { 'ok.txt': 'x', '../../etc/evil': 'x' } } });
    expect(res).toEqual({ status: 400, json: { error: expect.stringMatching(/^'files\["\.\.\/\.\.\/etc\/evil"\]': the path must not contain '\.\.'/) } });
    expect((await raw('GET', '/filesystem/tmp/escape')).status).toBe(404);
  });
});

describe('multipart upload refusals, in the reference\'s error shape', () => {
  test('a part number out of range, a missing one, an unknown upload id: 4xx naming the field', async () => {
    const uploadId = await initiate('/tmp/refusals.bin');
    for (const partNumber of ['0', '10001', '-1']) {
      expect(await raw('PUT', `/filesystem-multipart/${uploadId}/part?partNumber=${partNumber}`, { form: partForm(Buffer.from('x')) })).toEqual({
        status: 400,
        json: { error: "query parameter 'partNumber' must be an integer from 1 to 10000" },
      });
    }
    expect(await raw('PUT', `/filesystem-multipart/${uploadId}/part`, { form: partForm(Buffer.from('x')) })).toEqual({ status: 400, json: { error: "query parameter 'partNumber' is required" } });
    const unknown = '0b7f2a8e-1c3d-4e5f-8a9b-0c1d2e3f4a5b';
    for (const [method, path] of [['PUT', `/filesystem-multipart/${unknown}/part?partNumber=1`], ['GET', `/filesystem-multipart/${unknown}/parts`], ['DELETE', `/filesystem-multipart/${unknown}/abort`]]) {
      const res = await raw(method, path, method === 'PUT' ? { form: partForm(Buffer.from('x')) } : undefined);
      expect(res).toEqual({ status: 404, json: { error: `no multipart upload with uploadId '${unknown}'` } });
    }
    const completeUnknown = await raw('POST', `/filesystem-multipart/${unknown}/complete`, { json: { parts: [{ partNumber: 1, etag: 'x' }] } });
    expect(completeUnknown).toEqual({ status: 404, json: { error: expect.stringMatching(/uploadId/) } });
  });

  test('a refusal that comes while the client still sends its part reaches the client whole', async () => {
    const uploadId = await initiate('/tmp/early-answer.bin');
    // The part number is refused as soon as the part begins; the client is still sending 5 MiB.
    for (let i = 0; i < 8; i++) {
      expect(await raw('PUT', `/filesystem-multipart/${uploadId}/part?partNumber=0`, { form: partForm(Buffer.alloc(5 * MiB, 2)) })).toEqual({
        status: 400,
        json: { error: "query parameter 'partNumber' must be an integer from 1 to 10000" },
      });
    }
  });

  test('complete with a wrong etag or a part never sent is refused, naming the entry; the upload stays and completes once right', async () => {
    const uploadId = await initiate('/tmp/etags.bin');
    const one = await raw('PUT', `/filesystem-multipart/${uploadId}/part?partNumber=1`, { form: partForm(Buffer.from('first ')) });
    const two = await raw('PUT', `/filesystem-multipart/${uploadId}/part?partNumber=2`, { form: partForm(Buffer.from('second')) });
    expect(one).toEqual({ status: 200, json: { partNumber: 1, etag: createHash('sha256').update('first ').digest('hex').slice(0, 32), size: 6 } });
    const parts = [one.json, two.json].map((p) => ({ partNumber: p!.partNumber, etag: p!.etag }));

    const wrongEtag = await raw('POST', `/filesystem-multipart/${uploadId}/complete`, { json: { parts: [parts[0], { ...parts[1], etag: parts[0].etag }] } });
    expect(wrongEtag).toEqual({ status: 400, json: { error: "'parts[1].etag' does not match part 2 as uploaded" } });
    const missing = await raw('POST', `/filesystem-multipart/${uploadId}/complete`, { json: { parts: [...parts, { partNumber: 3, etag: parts[0].etag }] } });
    expect(missing).toEqual({ status: 400, json: { error: "'parts[2].partNumber': part 3 was not uploaded" } });
    expect(await raw('POST', `/filesystem-multipart/${uploadId}/complete`, { json: {} })).toEqual({ status: 400, json: { error: "'parts' must be a list of {partNumber, etag}" } });

    const listed = await raw('GET', `/filesystem-multipart/${uploadId}/parts`);
    expect(listed.json).toEqual({ uploadId, parts: [expect.objectContaining({ partNumber: 1, size: 6 }), expect.objectContaining({ partNumber: 2, size: 6 })] });
    // Listed in any order: assembled by part number.
    expect(await raw('POST', `/filesystem-multipart/${uploadId}/complete`, { json: { parts: [parts[1], parts[0]] } })).toEqual({
      status: 200,
      json: { path: '/tmp/etags.bin', message: 'Multipart upload completed' },
    });
    expect(await sandbox.fs.read('/tmp/etags.bin')).toBe('first second');
  });

  test('a part above 5 MiB is refused with 413 naming the file field; abort forgets the upload', async () => {
    const uploadId = await initiate('/tmp/too-big.bin');
    const res = await raw('PUT', `/filesystem-multipart/${uploadId}/part?partNumber=1`, { form: partForm(Buffer.alloc(5 * MiB + 1, 1)) });
    expect(res).toEqual({ status: 413, json: { error: `'file' is larger than ${5 * MiB} bytes` } });
    expect((await raw('GET', `/filesystem-multipart/${uploadId}/parts`)).json).toEqual({ uploadId, parts: [] });
    const mine = async () => ((await raw('GET', '/filesystem-multipart')).json!.uploads as { uploadId: string }[]).filter((u) => u.uploadId === uploadId);
    expect(await mine()).toEqual([{ uploadId, path: '/tmp/too-big.bin', permissions: 0o644, initiatedAt: expect.any(String), parts: {} }]);
    expect(await raw('DELETE', `/filesystem-multipart/${uploadId}/abort`)).toEqual({ status: 200, json: { path: '/tmp/too-big.bin', message: 'Multipart upload aborted' } });
    expect(await mine()).toEqual([]);
    expect((await raw('GET', `/filesystem-multipart/${uploadId}/parts`)).status).toBe(404);
  });

  test('a part whose client goes away half-way can be sent again at once, and the upload completes', async () => {
    const uploadId = await initiate('/tmp/retried.bin');
    const url = new URL(`${sandbox.metadata.url}/filesystem-multipart/${uploadId}/part?partNumber=1`);
    const boundary = 'retryBoundary';
    // Announces 1 MiB of part, sends 64 KiB of it, and hangs up: as a connection reset mid-part does.
    await new Promise<void>((resolve) => {
      const req = http.request({ host: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, method: 'PUT', headers: {
        authorization: `Bearer ${tenant.admin.apiKey}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': 1024 * 1024,
      } });
      req.on('error', () => resolve());
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="blob"\r\n\r\n`);
      req.write(Buffer.alloc(64 * 1024, 1), () => setTimeout(() => {
        req.destroy();
        resolve();
      }, 200));
    });
    const again = await eventually('the part sent again', async () => {
      const res = await raw('PUT', `/filesystem-multipart/${uploadId}/part?partNumber=1`, { form: partForm(Buffer.from('whole part')) });
      return res.status === 200 ? res : undefined;
    }, 10_000);
    expect(await raw('POST', `/filesystem-multipart/${uploadId}/complete`, { json: { parts: [again.json] } })).toMatchObject({ status: 200 });
    expect(await sandbox.fs.read('/tmp/retried.bin')).toBe('whole part');
  });

  test('an upload to a folder the API may not write is refused at initiate', async () => {
    expect(await raw('POST', '/filesystem-multipart/initiate/usr/bin/evil', { json: {} })).toEqual({ status: 403, json: { error: expect.stringMatching(/outside the writable folders/) } });
    expect(await raw('POST', '/filesystem-multipart/initiate/tmp/x.bin', { json: { permissions: 'rw' } })).toEqual({ status: 400, json: { error: expect.stringMatching(/^'permissions' must be octal/) } });
  });
});
