import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createClient } from '@clickhouse/client';
import { Client } from 'pg';
import { startStack } from '../../../scripts/stack';
import { runLocalService } from '../../../scripts/stack/local-service';
import type { ServiceEvent } from '../../../scripts/stack/service-supervisor';
import { lockDataDir } from '../../../scripts/stack/stack-lock';
import { superviseChild } from '../../../scripts/supervised-child';
import { findLeftover, isAlive, launchService, parentDeathPrefix, processTreePids, stopLeftover } from '../../../scripts/stack/service-process';
import { sleep } from '../../../scripts/stack/timing';
import { repoRoot, temporalBinary } from '../../../scripts/stack/binaries';
import { backendMallocTunables } from '../../../scripts/stack/postgres';
import { namespaceSearchAttributes, SEARCH_ATTRIBUTES } from '../../../scripts/stack/temporal';
import { testStack } from '../../setup/stack';
import { testConfig } from '../../setup/test-config';

jest.setTimeout(120_000);

async function pgQuery<T extends object>(url: string, sql: string): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** Live processes whose command line mentions `text` (a temp folder unique to one test). */
function processesMentioning(text: string): number[] {
  return fs
    .readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => pid !== process.pid && isAlive(pid))
    .filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text);
      } catch {
        return false;
      }
    });
}

/** Waits (bounded) until `pid` is gone; returns whether it went. */
async function goneWithin(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isAlive(pid) && Date.now() < deadline) await sleep(100);
  return !isAlive(pid);
}

describe('the services of the test set-up', () => {
  const stack = testStack();

  test('PostgreSQL runs SQL on database hangar, with the migrations applied', async () => {
    const [row] = await pgQuery<{ db: string; two: number }>(stack.databaseUrl, 'SELECT current_database() AS db, 1 + 1 AS two');
    expect(row).toEqual({ db: 'hangar', two: 2 });
    const migrations = await pgQuery<{ name: string }>(stack.databaseUrl, 'SELECT name FROM schema_migrations');
    expect(migrations.map((m) => m.name)).toContain('001_foundation');
  });

  test('PostgreSQL backends keep the memory a statement freed for the next one, instead of faulting it in again', async () => {
    const client = new Client({ connectionString: stack.databaseUrl });
    await client.connect();
    try {
      const { pid } = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0];
      const minorFaults = () => Number(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[7]);
      // Tens of megabytes, as an ingestion request's outbox text takes: glibc's defaults map and
      // unmap such blocks at every statement (about 11,700 page faults each time here).
      const faults: number[] = [];
      for (let i = 0; i < 3; i++) {
        const before = minorFaults();
        await client.query("SELECT length(repeat('x', 24000000))");
        faults.push(minorFaults() - before);
      }
      expect(faults[0]).toBeGreaterThan(5_000);
      expect(faults[1] + faults[2]).toBeLessThan(1_000);
    } finally {
      await client.end();
    }
    expect(backendMallocTunables('glibc.malloc.arena_max=2')).toBe(`glibc.malloc.arena_max=2:${backendMallocTunables(undefined)}`);
  });

  test('ClickHouse answers a query in its database, which holds the usage tables', async () => {
    const client = createClient({ url: stack.clickhouseUrl });
    try {
      const result = await client.query({ query: `SELECT name FROM system.tables WHERE database = '${stack.clickhouseDatabase}'`, format: 'JSONEachRow' });
      const tables = (await result.json<{ name: string }>()).map((t) => t.name);
      expect(tables.length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  });

  test('Temporal describes its namespace, with the three search attributes registered', async () => {
    const attributes = await namespaceSearchAttributes(stack.temporalAddress, stack.config.temporalNamespace);
    for (const name of SEARCH_ATTRIBUTES) expect(attributes).toContain(name);
  });
});

describe('process supervision', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-supervision-'));
  });
  afterEach(() => {
    for (const pid of processesMentioning(dir)) process.kill(pid, 'SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const spec = (script: string, stopTimeoutMs = 5_000) => ({
    name: 'fake',
    // The folder in the command line is the marker that recognises the process.
    argv: ['sh', '-c', script, dir],
    runAs: [],
    logFile: path.join(dir, 'fake.log'),
    pidFile: path.join(dir, 'fake.pid'),
    marker: dir,
    stopSignal: 'SIGTERM' as const,
    stopTimeoutMs,
  });

  test('stop() ends the service and what it forked, and removes its pid file', async () => {
    const service = await launchService({ ...spec('sleep 300 & sleep 300; wait'), bindToParent: true });
    expect(fs.readFileSync(path.join(dir, 'fake.pid'), 'utf8').trim()).toBe(String(service.pid));
    await sleep(200);
    expect(processesMentioning(dir).length).toBeGreaterThanOrEqual(1);
    await service.stop();
    expect(service.isRunning()).toBe(false);
    expect(processesMentioning(dir)).toEqual([]);
    expect(fs.existsSync(path.join(dir, 'fake.pid'))).toBe(false);
  });

  test('a service that ignores its stop signal is killed after the timeout', async () => {
    const service = await launchService({ ...spec("trap '' TERM; sleep 300 & wait; sleep 300", 500), bindToParent: false });
    await sleep(200);
    await service.stop();
    expect(await service.exited).toBe('signal SIGKILL');
    expect(processesMentioning(dir)).toEqual([]);
  });

  test('a service bound to its parent stops when the parent is killed with SIGKILL', async () => {
    // A stand-in supervisor: spawns the command the way launchService does, prints its pid, waits.
    const argv = [...parentDeathPrefix('SIGTERM'), 'sleep', '300'];
    const supervisor = spawn(
      process.execPath,
      ['-e', `const c = require('child_process').spawn(process.argv[1], process.argv.slice(2), { detached: true, stdio: 'ignore' }); c.on('spawn', () => console.log(c.pid)); setInterval(() => {}, 1000);`, ...argv],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const servicePid = await new Promise<number>((resolve) => supervisor.stdout.once('data', (chunk) => resolve(Number(String(chunk).trim()))));
    try {
      await sleep(300);
      expect(isAlive(servicePid)).toBe(true);
      supervisor.kill('SIGKILL');
      expect(await goneWithin(servicePid, 10_000)).toBe(true);
    } finally {
      if (isAlive(servicePid)) process.kill(servicePid, 'SIGKILL');
    }
  });

  test('a leftover is found through its pid file and stopped; a pid file naming another process is ignored', async () => {
    const service = await launchService({ ...spec('sleep 300'), bindToParent: false });
    // As if the supervisor had died: nobody calls stop(); the next start finds the process.
    const pidFile = path.join(dir, 'fake.pid');
    expect(findLeftover(pidFile, dir)).toBe(service.pid);
    await stopLeftover(service.pid, 'SIGTERM', 5_000);
    expect(isAlive(service.pid)).toBe(false);

    fs.writeFileSync(pidFile, `${process.pid}\n`);
    expect(findLeftover(pidFile, dir)).toBeUndefined();
    fs.writeFileSync(pidFile, 'garbage\n');
    expect(findLeftover(pidFile, dir)).toBeUndefined();
  });

  /** A launch context restarting quickly, recording every service event. */
  const restartingContext = (budget = { restarts: 3, windowMs: 60_000 }) => {
    const events: ServiceEvent[] = [];
    const ctx = {
      log: () => undefined,
      bindToParent: true,
      reuseRunning: false,
      readyTimeoutMs: 5_000,
      restartPolicy: { firstDelayMs: 50, maxDelayMs: 200, stableAfterMs: 60_000, budget },
      onServiceEvent: (event: ServiceEvent) => events.push(event),
    };
    return { ctx, events };
  };
  const pidOf = () => Number(fs.readFileSync(path.join(dir, 'fake.pid'), 'utf8'));
  const serviceRunning = () => {
    try {
      return isAlive(pidOf());
    } catch {
      return false; // no pid file between a death and the restart
    }
  };
  const until = async (what: string, check: () => boolean) => {
    const deadline = Date.now() + 10_000;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`not within 10s: ${what}`);
      await sleep(50);
    }
  };

  test('a service that dies on its own is restarted with what it forked gone, and said so; one stopped on purpose is not', async () => {
    const { ctx, events } = restartingContext();
    // Forks helpers into its group, as PostgreSQL forks backends: a SIGKILL of the main process leaves them behind.
    const service = await runLocalService(ctx, { spec: spec('sleep 300 & sleep 300; wait'), ports: [], probe: async () => undefined });
    try {
      const first = pidOf();
      await until('the helpers are forked', () => processTreePids(first).length >= 3);
      const firstTree = processTreePids(first);
      process.kill(first, 'SIGKILL');
      await until('the service is back', () => events.some((e) => e.kind === 'back'));
      expect(events.map((e) => e.kind)).toEqual(['died', 'back']);
      expect(events[0].message).toMatch(/^fake died \(signal SIGKILL; see .*fake\.log\); restarting in 0\.05s \(restart 1 of 3 in 60s\)$/);
      // The helpers of the killed one went with it.
      expect(firstTree.filter(isAlive)).toEqual([]);
      const second = pidOf();
      expect(second).not.toBe(first);
      expect(isAlive(second)).toBe(true);
    } finally {
      await service.stop();
    }
    await sleep(300);
    expect(events.map((e) => e.kind)).toEqual(['died', 'back']);
    expect(processesMentioning(dir)).toEqual([]);
  });

  test('a service that keeps dying is given up once the restart budget is spent, and not started again', async () => {
    const { ctx, events } = restartingContext({ restarts: 2, windowMs: 60_000 });
    const service = await runLocalService(ctx, { spec: spec('sleep 300'), ports: [], probe: async () => undefined });
    try {
      for (let kill = 1; kill <= 3; kill++) {
        await until(`launch ${kill} is ready`, () => events.filter((e) => e.kind === 'back').length === kill - 1 && serviceRunning());
        process.kill(pidOf(), 'SIGKILL');
        await until(`death ${kill} is told`, () => events.filter((e) => e.kind !== 'back').length === kill);
      }
      expect(events.map((e) => e.kind)).toEqual(['died', 'back', 'died', 'back', 'gave-up']);
      expect(events[4].message).toMatch(/^fake died \(signal SIGKILL; see .*\) after 2 restarts in 60s: giving up$/);
      await sleep(500);
      expect(processesMentioning(dir)).toEqual([]);
    } finally {
      await service.stop();
    }
  });

  test('the data-folder lock is taken over from a dead owner, and refused while its owner lives', async () => {
    fs.writeFileSync(path.join(dir, 'stack.lock'), '999999999 1');
    const release = await lockDataDir(dir, { waitMs: 0, log: () => undefined });
    await expect(lockDataDir(dir, { waitMs: 0, log: () => undefined })).rejects.toThrow(`in use by process ${process.pid}`);
    release();
    expect(fs.existsSync(path.join(dir, 'stack.lock'))).toBe(false);
  });
});

describe('platform process supervision', () => {
  test('a crashing child is restarted with backoff until stop(), which ends it for good', async () => {
    const output: string[] = [];
    const events: string[] = [];
    const child = superviseChild({
      name: 'crasher',
      argv: [process.execPath, '-e', "console.log('up'); process.exit(3)"],
      env: process.env,
      output: (line) => output.push(line),
      log: (line) => events.push(line),
    });
    const deadline = Date.now() + 15_000;
    while (output.length < 2 && Date.now() < deadline) await sleep(100);
    await child.stop();
    expect(output.slice(0, 2)).toEqual(['[crasher] up', '[crasher] up']);
    expect(events[0]).toBe('crasher exited (exit code 3); restarting in 1s');
    const launches = output.length;
    await sleep(2_500);
    expect(output.length).toBe(launches);
  });

  test('stop() ends a running child and anything it forked', async () => {
    const marker = `hangar-child-${process.pid}-${Date.now()}`;
    const child = superviseChild({
      name: 'sleeper',
      argv: ['sh', '-c', 'sleep 300 & sleep 300; wait', marker],
      env: process.env,
      output: () => undefined,
      log: () => undefined,
    });
    await sleep(300);
    expect(processesMentioning(marker).length).toBeGreaterThanOrEqual(1);
    await child.stop(5_000);
    expect(child.pid()).toBeUndefined();
    expect(processesMentioning(marker)).toEqual([]);
  });
});

describe('a throw-away stack', () => {
  let dataDir: string;
  // Ports of their own, clear of the test stack's and npm start's: shifted from this run's own
  // offset, so that two runs with different offsets (HANGAR_TEST_PORT_OFFSET) do not meet here.
  const throwAwayOffset = String(Number(process.env.HANGAR_TEST_PORT_OFFSET || 0) + 37);
  const config = () => ({ ...testConfig({ HANGAR_TEST_PORT_OFFSET: throwAwayOffset }), dataDir });
  const quiet = () => undefined;

  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-stack-'));
  });
  afterEach(() => {
    for (const pid of processesMentioning(dataDir)) process.kill(pid, 'SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('starts, keeps its data across a restart, refuses a second supervisor, and stop() leaves no process', async () => {
    const first = await startStack(config(), quiet, { fastWrites: true });
    try {
      await pgQuery(first.databaseUrl, 'CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)');
      expect(processesMentioning(dataDir).length).toBeGreaterThanOrEqual(3);
      await expect(startStack(config(), quiet)).rejects.toThrow(/in use by process/);
    } finally {
      await first.stop();
    }
    expect(processesMentioning(dataDir)).toEqual([]);

    // After a hard kill postmaster.pid stays behind, and its pid may by now be another process's.
    const pgdata = path.join(dataDir, 'postgres', 'data');
    fs.writeFileSync(path.join(pgdata, 'postmaster.pid'), `${process.pid}\n${pgdata}\n`);
    const second = await startStack(config(), quiet, { fastWrites: true });
    try {
      expect(second.databaseUrl).toBe(first.databaseUrl);
      expect(await pgQuery(second.databaseUrl, 'SELECT v FROM kept')).toEqual([{ v: 42 }]);
    } finally {
      await second.stop();
    }
    expect(processesMentioning(dataDir)).toEqual([]);
  });

  test('a taken port fails the start with a message naming it, and stops what had started', async () => {
    const cfg = config();
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(cfg.temporalPort, '127.0.0.1', resolve));
    try {
      await expect(startStack(cfg, quiet, { fastWrites: true })).rejects.toThrow(
        new RegExp(`port ${cfg.temporalPort} for Temporal frontend \\(HANGAR_TEMPORAL_PORT\\) is already in use`),
      );
    } finally {
      blocker.close();
    }
    expect(processesMentioning(dataDir)).toEqual([]);
    expect(fs.existsSync(path.join(dataDir, 'stack.lock'))).toBe(false);
  });

  test('an unreachable external PostgreSQL fails within the bound, without echoing its password', async () => {
    const { clickhouseUrl, temporalAddress } = testStack();
    const cfg = { ...config(), databaseUrl: 'postgres://someone:s3cret@127.0.0.1:1/db', clickhouseUrl, temporalAddress };
    const attempt = startStack(cfg, quiet, { readyTimeoutMs: 1_500 });
    await expect(attempt).rejects.toThrow(/PostgreSQL at postgres:\/\/someone:\*\*\*@127\.0\.0\.1:1\/db was not ready within 2s/);
    await expect(attempt).rejects.not.toThrow(/s3cret/);
  });
});

describe('a fresh clone', () => {
  let cloneDir: string;
  afterEach(() => fs.rmSync(cloneDir, { recursive: true, force: true }));

  // What CI does first: a clone of the commit under test, then the install step of npm test and
  // npm start. An install that rewrites a tracked file (npm install "completing" the lock) makes
  // installs irreproducible and every fresh checkout look modified.
  test('the install step (npm ci, build, workflow bundle) leaves git status clean', () => {
    cloneDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-clone-'));
    const git = (...args: string[]) => execFileSync('git', args, { cwd: cloneDir, encoding: 'utf8' });
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repoRoot(), encoding: 'utf8' }).trim();
    git('clone', '--quiet', '--no-checkout', repoRoot(), '.');
    git('checkout', '--quiet', head);
    // The temporal CLI this run already uses, so that the clone does not fetch its own copy.
    execFileSync('bash', ['scripts/install-deps.sh'], {
      cwd: cloneDir,
      env: { ...process.env, HANGAR_TEMPORAL_BIN: temporalBinary() },
      stdio: 'pipe',
    });
    expect(fs.existsSync(path.join(cloneDir, 'dist', 'workflows.bundle.js'))).toBe(true);
    expect(git('status', '--porcelain')).toBe('');
  });
});
