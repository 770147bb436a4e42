import fc from 'fast-check';
import { Readable } from 'node:stream';
import { HttpError } from '../../../sandbox-agent/http';
import { multipartBoundary, parseMultipart } from '../../../sandbox-agent/multipart';

const boundary = '----hangar7MA4YWxk';

function body(file: Buffer, fields: Record<string, string> = {}): Buffer {
  return Buffer.concat([
    ...Object.entries(fields).map(([name, value]) => Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`)),
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    file,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
}

async function parse(chunks: Buffer[]) {
  const received: Buffer[] = [];
  const result = await parseMultipart(Readable.from(chunks), boundary, {
    fileField: 'file',
    onFile: async (data) => {
      for await (const chunk of data) received.push(chunk as Buffer);
    },
  });
  return { ...result, file: Buffer.concat(received) };
}

function split(buffer: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (buffer.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const point of points) {
    chunks.push(buffer.subarray(from, point));
    from = point;
  }
  chunks.push(buffer.subarray(from));
  return chunks.filter((c) => c.length > 0);
}

test('the file arrives byte for byte however the body is cut into chunks', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.uint8Array({ maxLength: 2000 }),
      fc.array(fc.nat(), { maxLength: 12 }),
      // Content that looks like the boundary without being a delimiter.
      fc.constantFrom('', `--${boundary}`, `\r\n--${boundary.slice(0, -1)}`, '\r\n\r\n', `\r\n-${boundary}`),
      async (bytes, cuts, lookalike) => {
        const file = Buffer.concat([Buffer.from(bytes), Buffer.from(lookalike), Buffer.from(bytes)]);
        // A lookalike the random bytes complete into the real delimiter is no valid encoding of
        // the file: a sender picks a boundary its content does not hold. That includes content
        // that begins with `--boundary`: with the CRLF that ends the part's headers it forms the
        // delimiter (RFC 2046 attaches that CRLF to the boundary).
        fc.pre(!Buffer.concat([Buffer.from('\r\n'), file]).includes(`\r\n--${boundary}`));
        const result = await parse(split(body(file, { permissions: '0600' }), cuts));
        return result.file.equals(file) && result.fields.get('permissions') === '0600';
      },
    ),
    { numRuns: 200 },
  );
});

test('a body without its closing boundary is refused', async () => {
  const whole = body(Buffer.from('data'));
  await expect(parse([whole.subarray(0, whole.length - 10)])).rejects.toThrow(/ended before its closing boundary/);
});

test('a part without a form-data name is refused', async () => {
  const bad = Buffer.from(`--${boundary}\r\nContent-Type: text/plain\r\n\r\nx\r\n--${boundary}--\r\n`);
  await expect(parse([bad])).rejects.toBeInstanceOf(HttpError);
});

test('the boundary comes from the content type', () => {
  expect(multipartBoundary('multipart/form-data; boundary=abc')).toBe('abc');
  expect(multipartBoundary('multipart/form-data; boundary="a b"')).toBe('a b');
  expect(multipartBoundary('application/json')).toBeUndefined();
  expect(() => multipartBoundary('multipart/form-data')).toThrow(/boundary/);
});

test('a file of exactly the size limit passes; one byte more is a 413 naming the field', async () => {
  const parseLimited = (file: Buffer) =>
    parseMultipart(Readable.from([body(file)]), boundary, {
      fileField: 'file',
      maxFileBytes: 1000,
      onFile: async (data) => {
        for await (const _chunk of data) {
          // drained
        }
      },
    });
  await expect(parseLimited(Buffer.alloc(1000, 1))).resolves.toBeDefined();
  await expect(parseLimited(Buffer.alloc(1001, 1))).rejects.toMatchObject({ status: 413, message: "'file' is larger than 1000 bytes" });
});

test('a body cut off mid-file (the client went away) fails the file stream too, so its consumer never waits forever', async () => {
  const whole = body(Buffer.alloc(100_000, 3));
  let consumer: Promise<unknown> | undefined;
  let sent = false;
  const cut = new Readable({
    read() {
      if (sent) return;
      sent = true;
      this.push(whole.subarray(0, 50_000));
      setImmediate(() => this.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })));
    },
  });
  const parsed = parseMultipart(cut, boundary, {
    fileField: 'file',
    onFile: (data) => {
      consumer = (async () => {
        for await (const _chunk of data) {
          // drained
        }
      })();
      return consumer as Promise<void>;
    },
  });
  await expect(parsed).rejects.toThrow();
  await expect(consumer).rejects.toThrow();
});

test('a file its consumer refuses without reading is answered with that refusal, and nothing is left to throw', async () => {
  const uncaught: unknown[] = [];
  const record = (err: unknown) => uncaught.push(err);
  process.on('uncaughtException', record);
  try {
    const refused = parseMultipart(Readable.from([body(Buffer.alloc(200_000, 5))]), boundary, {
      fileField: 'file',
      onFile: async () => {
        throw new HttpError(400, "query parameter 'partNumber' must be an integer from 1 to 10000");
      },
    });
    await expect(refused).rejects.toMatchObject({ status: 400, message: expect.stringMatching(/partNumber/) });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(uncaught).toEqual([]);
  } finally {
    process.off('uncaughtException', record);
  }
});

test('a refusal is answered once the rest of the body is read: a client still sending would leave the connection hanging', async () => {
  const whole = body(Buffer.alloc(300_000, 1));
  const chunks = [whole.subarray(0, 1000), whole.subarray(1000, 150_000), whole.subarray(150_000)];
  const events: string[] = [];
  const slow = new Readable({
    read() {
      setTimeout(() => {
        const next = chunks.shift();
        if (next) return this.push(next);
        events.push('body read');
        this.push(null);
      }, 5);
    },
  });
  const onFile = async () => {
    throw new HttpError(400, 'refused');
  };
  await parseMultipart(slow, boundary, { fileField: 'file', onFile }).catch(() => events.push('refused'));
  expect(events).toEqual(['body read', 'refused']);
});
