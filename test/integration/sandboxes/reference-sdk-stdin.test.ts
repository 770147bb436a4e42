import { SandboxInstance } from '@blaxel/core';
import fc from 'fast-check';
import { unique } from '../../helpers/platform';
import { deployedSandbox, startReferenceSdkPlatform, type ReferenceSdkPlatform } from '../../helpers/reference-sdk';
import { eventually } from '../../helpers/workers';

// A process's stdin driven by the reference SDK (process.exec with `stdin: true`, then its
// process.writeStdin and process.closeStdin), unchanged but for header names and base URLs
// (test/helpers/reference-sdk.ts). Real sandboxes on a busy machine: generous limits; no test
// asserts on time.
jest.setTimeout(180_000);

let platform: ReferenceSdkPlatform;
let sandbox: SandboxInstance;
const name = unique('sdkstdin');

beforeAll(async () => {
  platform = await startReferenceSdkPlatform('sdk-stdin');
  await SandboxInstance.create({ metadata: { name }, spec: { runtime: { image: 'hangar/base:latest', memory: 256 } } });
  sandbox = await deployedSandbox(name);
}, 150_000);

afterAll(() => platform.stop(), 60_000);

/** The HTTP status of a call the SDK turned into an error (its ResponseError carries it). */
async function statusOf(call: Promise<unknown>): Promise<number | undefined> {
  try {
    await call;
    return 200;
  } catch (err) {
    return (err as { status?: number }).status;
  }
}

/** Resolves with the process once it is no longer running. */
const ended = (process: string) =>
  eventually(`${process} ended`, async () => {
    const found = await sandbox.process.get(process);
    return found.status === 'running' ? undefined : found;
  }, 60_000);

/** Resolves once the process's stdout is `expected`. */
const stdoutIs = (process: string, expected: string) =>
  eventually(`${process} printed what was written`, async () => ((await sandbox.process.logs(process, 'stdout')) === expected ? true : undefined), 60_000);

describe('process stdin through the SDK', () => {
  test('sequential writes reach a reader in order while it runs; closing stdin gives it EOF and it ends', async () => {
    const reader = unique('reader');
    const started = await sandbox.process.exec({ name: reader, command: 'while IFS= read -r line; do echo "got:$line"; done; echo eof', stdin: true });
    expect(started).toMatchObject({ name: reader, status: 'running', stdin: true });

    const lines = ['first', 'second line with spaces', 'ünïcode ✓', '', 'last'];
    for (const line of lines) await sandbox.process.writeStdin(reader, `${line}\n`);
    const echoed = lines.map((line) => `got:${line}\n`).join('');
    // Each line came back while the reader still runs: it has not seen EOF yet.
    await stdoutIs(reader, echoed);
    expect((await sandbox.process.get(reader)).status).toBe('running');

    await sandbox.process.closeStdin(reader);
    expect(await ended(reader)).toMatchObject({ status: 'completed', exitCode: 0, stdin: true });
    expect(await sandbox.process.logs(reader, 'stdout')).toBe(`${echoed}eof\n`);
  });

  test('bytes go through verbatim, without a newline added or removed', async () => {
    const catter = unique('cat');
    await sandbox.process.exec({ name: catter, command: 'cat', stdin: true });
    await sandbox.process.writeStdin(catter, 'no newline');
    await sandbox.process.writeStdin(catter, new TextEncoder().encode(' then bytes\r\n\ttab'));
    await sandbox.process.closeStdin(catter);
    expect(await ended(catter)).toMatchObject({ status: 'completed', exitCode: 0 });
    expect(await sandbox.process.logs(catter, 'stdout')).toBe('no newline then bytes\r\n\ttab');
  });

  test('concurrent writers: every body arrives whole, never interleaved with another', async () => {
    // Bodies of several lines, some far above a pipe's 64 KiB, so that a write handed over in pieces would interleave.
    const bodies = fc.array(fc.record({ lines: fc.integer({ min: 1, max: 4 }), width: fc.integer({ min: 1, max: 120_000 }) }), { minLength: 2, maxLength: 6 });
    await fc.assert(
      fc.asyncProperty(bodies, async (shapes) => {
        const catter = unique('cc');
        await sandbox.process.exec({ name: catter, command: 'cat', stdin: true });
        const texts = shapes.map(({ lines, width }, i) =>
          Array.from({ length: lines }, (_, j) => `<${i}.${j}>${String.fromCharCode(97 + ((i + j) % 26)).repeat(Math.ceil(width / lines))}\n`).join(''),
        );
        await Promise.all(texts.map((text) => sandbox.process.writeStdin(catter, text)));
        await sandbox.process.closeStdin(catter);
        await ended(catter);
        const output = await sandbox.process.logs(catter, 'stdout');
        expect(splitIntoBodies(output, texts)).toEqual([...texts.keys()].sort((a, b) => a - b));
      }),
      { numRuns: 6 },
    );
  });

  test('a restarted process reads from a new pipe, fed by the same route', async () => {
    const flaky = unique('flaky');
    // Reads one line, says it, fails: restartOnFailure starts it again, with stdin again.
    await sandbox.process.exec({ name: flaky, command: 'IFS= read -r line; echo "got:$line"; exit 1', stdin: true, restartOnFailure: true, maxRestarts: 1 });
    await sandbox.process.writeStdin(flaky, 'one\n');
    await eventually('restarted', async () => ((await sandbox.process.get(flaky)).restartCount === 1 ? true : undefined), 60_000);
    await sandbox.process.writeStdin(flaky, 'two\n');
    expect(await ended(flaky)).toMatchObject({ status: 'failed', exitCode: 1, restartCount: 1 });
    expect(await sandbox.process.logs(flaky, 'stdout')).toBe('got:one\ngot:two\n');
  });

  test('409 for a process without stdin, after stdin was closed, and after the process ended; 404 for an unknown one', async () => {
    const plain = unique('plain');
    const started = await sandbox.process.exec({ name: plain, command: 'sleep 300' });
    expect(started.stdin).toBe(false);
    expect(await statusOf(sandbox.process.writeStdin(plain, 'x\n'))).toBe(409);
    expect(await statusOf(sandbox.process.closeStdin(plain))).toBe(409);
    await sandbox.process.kill(plain);

    const closed = unique('closed');
    // The reader keeps running after EOF, so the 409 is for the closed pipe, not for an ended process.
    await sandbox.process.exec({ name: closed, command: 'cat; sleep 300', stdin: true });
    await sandbox.process.closeStdin(closed);
    expect(await statusOf(sandbox.process.closeStdin(closed))).toBe(200);
    expect(await statusOf(sandbox.process.writeStdin(closed, 'late\n'))).toBe(409);
    expect((await sandbox.process.get(closed)).status).toBe('running');
    await sandbox.process.kill(closed);

    const finished = unique('done');
    await sandbox.process.exec({ name: finished, command: 'true', stdin: true, waitForCompletion: true });
    expect(await statusOf(sandbox.process.writeStdin(finished, 'late\n'))).toBe(409);

    expect(await statusOf(sandbox.process.writeStdin(unique('nobody'), 'x'))).toBe(404);
    expect(await statusOf(sandbox.process.closeStdin(unique('nobody')))).toBe(404);
  });

  test('a body above 8 MiB is a 413 and nothing of it reaches the process', async () => {
    const catter = unique('big');
    await sandbox.process.exec({ name: catter, command: 'cat', stdin: true });
    expect(await statusOf(sandbox.process.writeStdin(catter, new Uint8Array(8 * 1024 * 1024 + 1).fill(120)))).toBe(413);
    await sandbox.process.writeStdin(catter, 'after\n');
    await sandbox.process.closeStdin(catter);
    await ended(catter);
    expect(await sandbox.process.logs(catter, 'stdout')).toBe('after\n');
  });
});

/** The indexes of `bodies` whose concatenation `output` is, in output order; throws where a body is broken. */
function splitIntoBodies(output: string, bodies: string[]): number[] {
  const order: number[] = [];
  let at = 0;
  while (at < output.length) {
    const index = Number(/^<(\d+)\.0>/.exec(output.slice(at, at + 16))?.[1]);
    if (!Number.isInteger(index) || output.slice(at, at + bodies[index].length) !== bodies[index]) {
      throw new Error(`body broken at offset ${at}: ${JSON.stringify(output.slice(at, at + 40))}`);
    }
    order.push(index);
    at += bodies[index].length;
  }
  return order.sort((a, b) => a - b);
}
