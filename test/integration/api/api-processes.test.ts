import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { MANAGEMENT_PROCESS_V8_FLAGS } from '../../../api/management-cluster';
import { processTreePids } from '../../../scripts/stack/service-process';
import { freePort } from '../../helpers/ports';
import { eventually } from '../../helpers/workers';
import { testStack } from '../../setup/stack';
import { repoRoot } from '../../../scripts/stack/binaries';

jest.setTimeout(120_000);

/**
 * The API process as `npm start` runs it (dist/api/server.js, built by npm test), with the
 * management API in two processes.
 */
describe('the management API in several processes (HANGAR_API_PROCESSES)', () => {
  let server: ChildProcess | undefined;
  let output = '';

  afterEach(() => {
    if (server?.exitCode === null) server.kill('SIGKILL');
  });

  it('serves from each, replaces one that dies, and stops them all on SIGTERM', async () => {
    const stack = testStack();
    const [basePort, runPort, sandboxPort] = await Promise.all([freePort(), freePort(), freePort()]);
    server = spawn(process.execPath, [path.join(repoRoot(), 'dist/api/server.js')], {
      env: {
        ...process.env,
        DATABASE_URL: stack.databaseUrl,
        CLICKHOUSE_URL: stack.clickhouseUrl,
        CLICKHOUSE_DATABASE: stack.clickhouseDatabase,
        TEMPORAL_ADDRESS: stack.temporalAddress,
        HANGAR_BASE_PORT: String(basePort),
        HANGAR_RUN_PORT: String(runPort),
        HANGAR_SANDBOX_PORT: String(sandboxPort),
        HANGAR_API_PROCESSES: '2',
        HANGAR_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server.stdout!.on('data', (chunk) => (output += chunk));
    server.stderr!.on('data', (chunk) => (output += chunk));
    const primary = server.pid!;
    const workers = () => processTreePids(primary).filter((pid) => pid !== primary);
    const healthy = async () => (await fetch(`http://127.0.0.1:${basePort}/health`).catch(() => undefined))?.status === 200;

    const until = async (what: string, check: () => Promise<boolean>, timeoutMs: number) => {
      try {
        await eventually(what, async () => (await check()) || undefined, timeoutMs);
      } catch (err) {
        throw new Error(`${(err as Error).message}; server output:\n${output}`, { cause: err });
      }
    };
    // run_url listens once every management process does (api/server.ts): only then is the
    // start over, and a process killed before it would fail the start instead.
    const started = async () => (await fetch(`http://127.0.0.1:${runPort}/`).catch(() => undefined)) !== undefined;
    await until('two healthy processes', async () => (await started()) && (await healthy()) && workers().length === 2, 60_000);
    const first = workers();
    // Each runs with the V8 settings meant for them (a replacement too, below).
    const flagsOf = (pid: number) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    for (const pid of first) expect(flagsOf(pid)).toEqual(expect.arrayContaining(MANAGEMENT_PROCESS_V8_FLAGS));
    // Every request is answered, whichever process takes it.
    const statuses = await Promise.all(Array.from({ length: 20 }, () => fetch(`http://127.0.0.1:${basePort}/health`).then((r) => r.status)));
    expect(statuses).toEqual(Array(20).fill(200));

    process.kill(first[0], 'SIGKILL');
    // The other process keeps serving, and a new one takes the place of the dead.
    await until('a replacement process', async () => (await healthy()) && workers().length === 2 && !workers().includes(first[0]), 60_000);
    expect(workers()).toContain(first[1]);
    for (const pid of workers()) expect(flagsOf(pid)).toEqual(expect.arrayContaining(MANAGEMENT_PROCESS_V8_FLAGS));
    // The primary logs the death through its logger, whose write can reach this pipe after the
    // replacement is already serving: waited for (bounded), never skipped.
    await until('the replacement logged', async () => output.includes('a management API process exited; starting another'), 10_000);

    const exited = new Promise<number | null>((resolve) => server!.once('exit', (code) => resolve(code)));
    const last = workers();
    server.kill('SIGTERM');
    expect(await exited).toBe(0);
    await until('every process gone', async () => last.every((pid) => !alive(pid)), 10_000);
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
