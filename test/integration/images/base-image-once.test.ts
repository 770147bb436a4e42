import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { runtimeDataDir } from '../../helpers/sandbox-runtime';
import { standInMmdebstrap } from '../../helpers/stand-in-mmdebstrap';
import { typescriptRegister } from '../../helpers/typescript-child';

// Node processes building base-image at once, on a loaded 2-core machine: generous limits.
jest.setTimeout(600_000);

const dataDir = runtimeDataDir('base-image-once');
let register: string;
const repo = path.resolve(__dirname, '..', '..', '..');

beforeAll(() => {
  // The workers are other Node processes loading the runtime's TypeScript, compiled on the fly.
  register = typescriptRegister(dataDir);
});

afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

interface Worker {
  child: ChildProcess;
  digests: string[];
  errors: string[];
  exited: Promise<void>;
}

/** A node worker's stand-in: a process making `creates` sandboxes' worth of calls for base-image at once. */
function startWorker(root: string, mmdebstrap: string, creates: number): Worker {
  const script = `
    const { OciImageStore } = require(${JSON.stringify(path.join(repo, 'runtime/image-store.ts'))});
    const { DebianBaseImage } = require(${JSON.stringify(path.join(repo, 'runtime/base-image.ts'))});
    const image = new DebianBaseImage({ store: new OciImageStore({ root: ${JSON.stringify(path.join(root, 'oci'))} }), workDir: ${JSON.stringify(path.join(root, 'base-image'))}, mmdebstrapPath: ${JSON.stringify(mmdebstrap)} });
    for (let i = 0; i < ${creates}; i++) image.ensure().then((s) => console.log('ready ' + s.digest), (e) => console.log('error ' + e.message));`;
  const child = spawn(process.execPath, ['-r', register, '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  const worker: Worker = { child, digests: [], errors: [], exited: new Promise((resolve) => child.on('exit', () => resolve())) };
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    worker.digests = [...out.matchAll(/^ready (sha256:\w+)$/gm)].map((m) => m[1]);
    worker.errors = [...out.matchAll(/^error (.*)$/gm)].map((m) => m[1]);
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => worker.errors.push(chunk));
  return worker;
}

/** Processes whose command line names the stand-in: builds still running. */
function runningBuilds(program: string): number {
  let count = 0;
  for (const pid of fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    if (safeRead(`/proc/${pid}/cmdline`).includes(program)) count++;
  }
  return count;
}

function safeRead(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const schedule = fc.record({
  buildMs: fc.integer({ min: 200, max: 900 }),
  // Two or three workers, each starting after a delay with one or two creates at once.
  workers: fc.array(fc.record({ startAfterMs: fc.integer({ min: 0, max: 600 }), creates: fc.integer({ min: 1, max: 2 }) }), { minLength: 2, maxLength: 3 }),
  // Optionally one worker killed (SIGKILL) some time after it started, then started again: a node restart.
  restart: fc.option(fc.record({ worker: fc.nat(), afterMs: fc.integer({ min: 50, max: 1200 }) }), { nil: undefined }),
});

let run = 0;

test('creates in two or three node processes at once build base-image once; a worker killed mid-build and started again finishes it', async () => {
  await fc.assert(
    fc.asyncProperty(schedule, async ({ buildMs, workers: plan, restart }) => {
      const root = path.join(dataDir, `run-${++run}`);
      fs.mkdirSync(root, { recursive: true });
      const standIn = standInMmdebstrap(path.join(root, 'tool'));
      standIn.setDelay(buildMs);
      const workers: Worker[] = [];
      const starting = plan.map(async ({ startAfterMs, creates }, i) => {
        await sleep(startAfterMs);
        workers[i] = startWorker(root, standIn.path, creates);
        if (restart && restart.worker % plan.length === i) {
          await sleep(restart.afterMs);
          workers[i].child.kill('SIGKILL');
          await workers[i].exited;
          workers[i] = startWorker(root, standIn.path, creates);
        }
      });
      await Promise.all(starting);
      await Promise.all(workers.map((w) => w.exited));

      // Every create of every surviving worker has the one image.
      expect(workers.flatMap((w) => w.errors)).toEqual([]);
      const digests = new Set(workers.flatMap((w) => w.digests));
      expect(digests.size).toBe(1);
      expect(workers.map((w) => w.digests.length)).toEqual(plan.map((p) => p.creates));
      // Built once: a second build only where a restart cut the first short.
      const { started, finished } = standIn.runs();
      expect(started).toBeGreaterThanOrEqual(1);
      expect(started).toBeLessThanOrEqual(restart ? 2 : 1);
      expect(finished).toBeLessThanOrEqual(started);
      // One image unpacked; no attempt's folder and no stand-in left behind.
      expect(fs.readdirSync(path.join(root, 'oci', 'unpacked')).filter((n) => !n.startsWith('.'))).toHaveLength(1);
      expect(fs.readdirSync(path.join(root, 'base-image')).filter((n) => n.startsWith('attempt-'))).toEqual([]);
      for (let i = 0; runningBuilds(standIn.path) > 0 && i < 100; i++) await sleep(100);
      expect(runningBuilds(standIn.path)).toBe(0);
    }),
    { numRuns: 8 },
  );
});
