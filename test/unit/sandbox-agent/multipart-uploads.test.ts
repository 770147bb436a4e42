import fc from 'fast-check';
import { createHash, randomBytes } from 'node:crypto';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { MultipartUploadPartResponse } from '../../../sandbox-agent/contract/multipart-upload';
import { HttpError } from '../../../sandbox-agent/http';
import { MultipartUploads, type UploadTargets } from '../../../sandbox-agent/multipart-uploads';

// The upload store on a real folder; only the clock of the sweep is a test's.

let scratch: string;
beforeEach(async () => {
  scratch = await fsp.mkdtemp(path.join(os.tmpdir(), 'multipart-'));
});
afterEach(() => fsp.rm(scratch, { recursive: true, force: true }));

/** A part's etag: the first 128 bits of its SHA-256, in hex. */
const etagOf = (data: Buffer) => createHash('sha256').update(data).digest('hex').slice(0, 32);

/** The bytes as a stream cut at the given points. */
function chunked(data: Buffer, cuts: number[] = []): Readable {
  const points = [...new Set(cuts.map((c) => c % (data.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const point of [...points, data.length]) {
    if (point > from) chunks.push(data.subarray(from, point));
    from = point;
  }
  return Readable.from(chunks);
}

/** The sandbox's files, played by the scratch folder: sandbox path /x is <scratch>/files/x. */
const inScratch = (asked: string) => path.join(scratch, 'files', asked);
const targets: UploadTargets = {
  resolveWritable: async (asked) => inScratch(asked),
  makeDirectory: async (asked) => void (await fsp.mkdir(inScratch(asked), { recursive: true })),
  writeFile: async (asked, data, permissions) => pipeline(data, (await import('node:fs')).createWriteStream(inScratch(asked), { mode: permissions })),
};
const readTarget = (asked: string) => fsp.readFile(inScratch(asked));

const storeIn = (dir: string, now?: () => number) => new MultipartUploads(dir, targets, { idleMs: 60_000, now });

async function expectRefused(promise: Promise<unknown>, status: number, message: RegExp) {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(HttpError);
  expect((err as HttpError).status).toBe(status);
  expect((err as HttpError).message).toMatch(message);
}

test('parts sent in any order, concurrently, some sent twice, assemble into the file of the last of each', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.uint8Array({ maxLength: 3000 }), { minLength: 1, maxLength: 6 }),
      fc.array(fc.nat(), { maxLength: 4 }),
      fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
      fc.array(fc.nat(), { minLength: 12, maxLength: 12 }),
      async (partBytes, cuts, resend, sortKeys) => {
        const store = storeIn(path.join(scratch, `store-${Math.random()}`));
        const { uploadId } = await store.initiate('/out/file.bin', 0o644);
        const parts = partBytes.map((bytes) => Buffer.from(bytes));
        // Some parts are sent twice, the second time with other bytes; whichever arrives last wins.
        const sends = parts.flatMap((data, i) => (resend[i] ? [{ n: i + 1, data: Buffer.concat([data, Buffer.from('other')]) }, { n: i + 1, data }] : [{ n: i + 1, data }]));
        const order = sends.map((send, i) => ({ send, key: sortKeys[i] })).sort((a, b) => a.key - b.key).map(({ send }) => send);
        // Replacements of one part go in sequence; all else at once.
        const byPart = new Map<number, { n: number; data: Buffer }[]>();
        for (const send of order) byPart.set(send.n, [...(byPart.get(send.n) ?? []), send]);
        const last = new Map<number, MultipartUploadPartResponse>();
        await Promise.all(
          [...byPart.values()].map(async (queue) => {
            for (const send of queue) last.set(send.n, await store.putPart(uploadId, send.n, chunked(send.data, cuts)));
          }),
        );
        const expected = parts.map((_, i) => byPart.get(i + 1)!.at(-1)!.data);
        await store.complete(uploadId, [...last.values()].map(({ partNumber, etag }) => ({ partNumber, etag })));
        const written = await readTarget('/out/file.bin');
        return written.equals(Buffer.concat(expected)) && (await store.list()).length === 0;
      },
    ),
    { numRuns: 40 },
  );
});

test('a part answers its number, etag and size; list and listParts show what was received', async () => {
  const store = storeIn(scratch);
  const { uploadId, path: target } = await store.initiate('/home/user/big.bin', 0o600);
  expect(target).toBe('/home/user/big.bin');
  const data = Buffer.from('part two');
  expect(await store.putPart(uploadId, 2, chunked(data, [3]))).toEqual({ partNumber: 2, etag: etagOf(data), size: data.length });
  expect(await store.listParts(uploadId)).toEqual([{ partNumber: 2, etag: etagOf(data), size: data.length, uploadedAt: expect.any(String) }]);
  expect(await store.list()).toEqual([
    { uploadId, path: '/home/user/big.bin', permissions: 0o600, initiatedAt: expect.any(String), parts: { '2': expect.objectContaining({ etag: etagOf(data) }) } },
  ]);
});

test('complete refuses, naming the entry at fault: a missing part, a wrong etag, a part listed twice, a number out of range, no parts', async () => {
  const store = storeIn(scratch);
  const { uploadId } = await store.initiate('/f', 0o644);
  const one = await store.putPart(uploadId, 1, chunked(Buffer.from('one')));
  const ref = { partNumber: 1, etag: one.etag };
  await expectRefused(store.complete(uploadId, [ref, { partNumber: 2, etag: one.etag }]), 400, /'parts\[1\]\.partNumber': part 2 was not uploaded/);
  await expectRefused(store.complete(uploadId, [{ partNumber: 1, etag: etagOf(Buffer.from('other')) }]), 400, /'parts\[0\]\.etag' does not match part 1/);
  await expectRefused(store.complete(uploadId, [ref, ref]), 400, /'parts\[1\]\.partNumber': part 1 is listed twice/);
  await expectRefused(store.complete(uploadId, [{ partNumber: 10_001, etag: one.etag }]), 400, /'parts\[0\]\.partNumber' must be an integer from 1 to 10000/);
  await expectRefused(store.complete(uploadId, []), 400, /'parts' must list at least one part/);
  // Nothing was written and the upload is still there, ready for a right request.
  await expect(readTarget('/f')).rejects.toThrow();
  await store.complete(uploadId, [{ partNumber: 1, etag: `"${one.etag.toUpperCase()}"` }]);
  expect((await readTarget('/f')).toString()).toBe('one');
});

test('an unknown upload id and a part number out of range are refused', async () => {
  const store = storeIn(scratch);
  const { uploadId } = await store.initiate('/f', 0o644);
  for (const unknown of ['3f1b0c3e-0000-4000-8000-000000000000', '../../etc', 'x']) {
    await expectRefused(store.putPart(unknown, 1, chunked(Buffer.from('x'))), 404, /no multipart upload with uploadId/);
    await expectRefused(store.listParts(unknown), 404, /uploadId/);
    await expectRefused(store.abort(unknown), 404, /uploadId/);
    await expectRefused(store.complete(unknown, [{ partNumber: 1, etag: 'x' }]), 404, /uploadId/);
  }
  for (const partNumber of [0, -1, 10_001, 1.5]) await expectRefused(store.putPart(uploadId, partNumber, chunked(Buffer.from('x'))), 400, /'partNumber' must be an integer from 1 to 10000/);
});

test('a failed part leaves no trace, and the upload goes on', async () => {
  const store = storeIn(scratch);
  const { uploadId } = await store.initiate('/f', 0o644);
  const broken = new Readable({ read() {
    this.push(Buffer.from('half'));
    this.destroy(new Error('connection reset'));
  } });
  await expect(store.putPart(uploadId, 1, broken)).rejects.toThrow(/connection reset/);
  expect(await store.listParts(uploadId)).toEqual([]);
  expect(await fsp.readdir(path.join(scratch, uploadId))).toEqual(['upload.json']);
  const part = await store.putPart(uploadId, 1, chunked(Buffer.from('whole')));
  await store.complete(uploadId, [part]);
  expect((await readTarget('/f')).toString()).toBe('whole');
});

test('uploads survive a restart of the agent: a new store on the same folder completes them', async () => {
  const before = storeIn(scratch);
  const { uploadId } = await before.initiate('/f', 0o644);
  const part = await before.putPart(uploadId, 1, chunked(Buffer.from('kept')));
  const after = storeIn(scratch);
  expect((await after.list()).map((u) => u.uploadId)).toEqual([uploadId]);
  await after.complete(uploadId, [part]);
  expect((await readTarget('/f')).toString()).toBe('kept');
});

test('sweep deletes the uploads idle for longer than the bound, and only those', async () => {
  let clock = Date.now();
  const store = new MultipartUploads(path.join(scratch, 'store'), targets, { idleMs: 60_000, now: () => clock });
  const idle = await store.initiate('/idle', 0o644);
  await store.putPart(idle.uploadId, 1, chunked(Buffer.from('x')));
  const busy = await store.initiate('/busy', 0o644);
  // The idle upload's folder last changed a while ago; the busy one's just now.
  const past = new Date(Date.now() - 120_000);
  await fsp.utimes(path.join(scratch, 'store', idle.uploadId), past, past);
  clock = Date.now();
  expect(await store.sweep()).toEqual([idle.uploadId]);
  expect((await store.list()).map((u) => u.uploadId)).toEqual([busy.uploadId]);
  await expectRefused(store.listParts(idle.uploadId), 404, /uploadId/);
  // Past the bound for the other one too, but a part is streaming into it: kept until it lands.
  clock = Date.now() + 61_000;
  let started: () => void = () => undefined;
  const reading = new Promise<void>((resolve) => (started = resolve));
  // Its first read() says the part's bytes are being written.
  const streaming = new Readable({ read: () => started() });
  const landing = store.putPart(busy.uploadId, 1, streaming);
  await reading;
  expect(await store.sweep()).toEqual([]);
  streaming.push(null);
  await landing;
  // Idle past the bound again: swept.
  clock = Date.now() + 61_000;
  expect(await store.sweep()).toEqual([busy.uploadId]);
  expect(await fsp.readdir(path.join(scratch, 'store'))).toEqual([]);
});

test('complete, abort and late parts of one upload race: exactly one of complete and abort wins, and a file is only ever whole', async () => {
  await fc.assert(
    fc.asyncProperty(fc.constantFrom('complete-first', 'abort-first'), fc.nat({ max: 3 }), fc.nat({ max: 3 }), async (first, delayA, delayB) => {
      const dir = path.join(scratch, `race-${Math.random()}`);
      const target = `/${path.basename(dir)}/out.bin`;
      const store = storeIn(dir);
      const { uploadId } = await store.initiate(target, 0o644);
      const data = Buffer.alloc(200_000, 7);
      const part = await store.putPart(uploadId, 1, chunked(data, [1000, 50_000]));
      const wait = (ticks: number) => new Promise((resolve) => setTimeout(resolve, ticks));
      const complete = wait(first === 'complete-first' ? 0 : delayA).then(() => store.complete(uploadId, [part]));
      const abort = wait(first === 'abort-first' ? 0 : delayB).then(() => store.abort(uploadId));
      const late = store.putPart(uploadId, 2, chunked(Buffer.from('late')));
      const [c, a, l] = await Promise.allSettled([complete, abort, late]);
      const written = await readTarget(target).catch(() => undefined);
      const notFound = (r: PromiseSettledResult<unknown>) => r.status === 'rejected' && (r.reason as HttpError).status === 404;
      // One of complete and abort found the upload; the other answered 404.
      const oneWinner = (c.status === 'fulfilled') !== (a.status === 'fulfilled') && (notFound(c) || notFound(a));
      const fileRight = c.status === 'fulfilled' ? written?.equals(data) : written === undefined;
      const lateRight = l.status === 'fulfilled' || notFound(l);
      // Whoever won, no data file is left beside the target.
      const leftovers = (await fsp.readdir(path.dirname(inScratch(target)))).filter((name) => name.startsWith('.hangar-upload-'));
      return oneWinner && fileRight === true && lateRight && leftovers.length === 0 && (await store.list()).length === 0;
    }),
    { numRuns: 30 },
  );
});

test('parts that fill their 5 MiB slots, as the SDK sends them, become the file by a rename: nothing is copied', async () => {
  const store = storeIn(path.join(scratch, 'store'));
  const { uploadId } = await store.initiate('/big/whole.bin', 0o640);
  const first = randomBytes(5 * 1024 * 1024);
  const last = randomBytes(1234);
  // The last part first: parts arrive in any order.
  const two = await store.putPart(uploadId, 2, chunked(last));
  const one = await store.putPart(uploadId, 1, chunked(first, [70_000, 3_000_000]));
  const [dataFile] = (await fsp.readdir(inScratch('/big'))).filter((name) => name.startsWith('.hangar-upload-'));
  const { ino } = await fsp.stat(path.join(inScratch('/big'), dataFile));
  await store.complete(uploadId, [one, two]);
  const placed = await fsp.stat(inScratch('/big/whole.bin'));
  expect(placed.ino).toBe(ino);
  expect(placed.mode & 0o777).toBe(0o640);
  expect((await readTarget('/big/whole.bin')).equals(Buffer.concat([first, last]))).toBe(true);
  expect(await fsp.readdir(inScratch('/big'))).toEqual(['whole.bin']);
});

test('a part sent again that fails half-way leaves that part absent, never half old and half new', async () => {
  const store = storeIn(path.join(scratch, 'store'));
  const { uploadId } = await store.initiate('/f', 0o644);
  await store.putPart(uploadId, 1, chunked(Buffer.from('good bytes')));
  const broken = new Readable({ read() {
    this.push(Buffer.from('BAD'));
    this.destroy(new Error('connection reset'));
  } });
  await expect(store.putPart(uploadId, 1, broken)).rejects.toThrow(/connection reset/);
  expect(await store.listParts(uploadId)).toEqual([]);
});

test('two requests for the same part at once: the second is refused (409) while the first writes', async () => {
  const store = storeIn(path.join(scratch, 'store'));
  const { uploadId } = await store.initiate('/f', 0o644);
  let started: () => void = () => undefined;
  const reading = new Promise<void>((resolve) => (started = resolve));
  // Its first read() says the first request's bytes are being written.
  const slow = new Readable({ read: () => started() });
  const first = store.putPart(uploadId, 1, slow);
  await reading;
  await expectRefused(store.putPart(uploadId, 1, chunked(Buffer.from('other'))), 409, /part 1 .* is being uploaded/);
  slow.push(Buffer.from('first'));
  slow.push(null);
  await expect(first).resolves.toMatchObject({ partNumber: 1, size: 5 });
});
