import { spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'pg';
import { SandboxNetwork } from '../../../runtime/network/sandbox-network';
import { commandLineOf, isAlive, processTreePids, statFields } from '../../../scripts/stack/service-process';
import { servicePasswords } from '../../../scripts/stack/service-passwords';
import { sleep } from '../../../scripts/stack/timing';
import { freePort } from '../../helpers/ports';
import { shareSuiteImages, testRuntime } from '../../helpers/sandbox-runtime';
import { eventually } from '../../helpers/workers';
import { TEST_PORTS } from '../../setup/test-config';
import { deployJobCode } from '../jobs/helpers';
import { repoRoot } from '../../../scripts/stack/binaries';

// The whole platform as `npm start` runs it (dist/scripts/start.js, built by npm test), on a data
// folder and ports of its own. Generous limits on a busy 2-core machine; no assertion on time.
jest.setTimeout(240_000);

const SERVICES = ['postgres', 'clickhouse', 'temporal'] as const;
/** The ports npm start listens on or gives its services: every one of them free ones here. */
const PORT_VARIABLES = Object.keys(TEST_PORTS) as (keyof typeof TEST_PORTS)[];

/** One `npm start`: its output so far, and how it ended once it has. */
/** The platform's sandbox subnet: one of its own, away from every other test's (test-config.ts). */
const SANDBOX_SUBNET = `10.253.${randomInt(256)}.0/24`;

interface RunningPlatform {
  process: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  ports: Record<keyof typeof TEST_PORTS, number>;
}

async function startPlatform(dataDir: string): Promise<RunningPlatform> {
  const ports = Object.fromEntries(await Promise.all(PORT_VARIABLES.map(async (name) => [name, await freePort()]))) as RunningPlatform['ports'];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HANGAR_DATA_DIR: dataDir,
    HANGAR_API_PROCESSES: '1',
    HANGAR_LOG_LEVEL: 'warn',
    HANGAR_SANDBOX_WARM_POOL: '0',
    HANGAR_SANDBOX_SUBNET: SANDBOX_SUBNET,
  };
  for (const name of ['DATABASE_URL', 'CLICKHOUSE_URL', 'TEMPORAL_ADDRESS', 'HANGAR_TASK_QUEUE']) delete env[name];
  for (const [name, port] of Object.entries(ports)) env[name] = String(port);
  const child = spawn(process.execPath, [path.join(repoRoot(), 'dist/scripts/start.js')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const platform = { process: child, output: () => output, exited, ports };
  await until(platform, 'the platform to start', async () => output.includes('Hangar is running') || undefined, 120_000);
  return platform;
}

/** eventually(), failing at once if the platform exits, with its output in the error. */
async function until<T>(platform: Pick<RunningPlatform, 'output' | 'exited'>, what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const exitedFirst = platform.exited.then((code) => {
    throw new Error(`the platform exited (${code})`);
  });
  try {
    return await Promise.race([eventually(what, check, timeoutMs), exitedFirst]);
  } catch (err) {
    throw new Error(`${what}: ${(err as Error).message}\nplatform output:\n${platform.output().slice(-6_000)}`, { cause: err });
  } finally {
    exitedFirst.catch(() => undefined);
  }
}

const occurrences = (text: string, part: string) => text.split(part).length - 1;

/**
 * Usage events sent batch after batch, with known ids, each batch re-sent until it is
 * accepted (202), as a meter does: a re-sent event counts once, so in the end every id was
 * accepted and must be counted exactly once.
 */
class IngestionLoad {
  accepted = 0;
  private running = true;
  private readonly loop: Promise<void>;
  readonly wrongAnswers: string[] = [];

  constructor(
    private readonly send: (body: object) => Promise<{ status: number; text: string }>,
    private readonly resourceName: string,
    private readonly timestamp: string,
  ) {
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    for (let batch = 0; this.running; batch++) {
      const events = Array.from({ length: 50 }, (_, i) => ({
        id: `${this.resourceName}-${batch}-${i}`,
        timestamp: this.timestamp,
        workspace: 'default',
        resourceType: 'custom_domain',
        resourceName: this.resourceName,
        billingDimension: 'custom_domain_active_time_hours',
        quantity: 1,
      }));
      for (;;) {
        const reply = await this.send({ events }).catch((err: Error) => ({ status: 0, text: err.message }));
        if (reply.status === 202) break;
        // 503 (a service restarting) and no answer at all are what an outage may bring; anything else is wrong.
        if (reply.status !== 503 && reply.status !== 0) this.wrongAnswers.push(`${reply.status} ${reply.text}`);
        await sleep(200);
      }
      this.accepted += events.length;
      await sleep(50);
    }
  }

  /** Resolves once `count` more events were accepted. */
  async acceptsMore(count: number, timeoutMs = 60_000): Promise<void> {
    const target = this.accepted + count;
    await eventually(`${count} more accepted events`, async () => (this.accepted >= target ? true : undefined), timeoutMs);
  }

  async stop(): Promise<number> {
    this.running = false;
    await this.loop;
    return this.accepted;
  }
}

const TASK = `
const args = JSON.parse(process.env.TASK_ARGUMENTS);
setTimeout(() => process.exit(0), args.sleepMs);
`;

describe('a local service killed under load (npm start)', () => {
  let dataDir: string;
  let platform: RunningPlatform;
  let api: (method: string, url: string, body?: object) => Promise<{ status: number; text: string; json: () => any }>;
  let accountId: string;

  beforeAll(async () => {
    // Short: a sandbox's socket path (<dataDir>/sandboxes/<uuid>/api/agent.sock) must fit in 107 bytes.
    // Its node has base-image, the default image, as if built at an earlier start: the suite's.
    dataDir = shareSuiteImages(fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-crash-')));
    platform = await startPlatform(dataDir);
    const credentials = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'));
    accountId = credentials.accountId;
    api = async (method, url, body) => {
      const absolute = url.startsWith('http') ? url : `http://127.0.0.1:${platform.ports.HANGAR_BASE_PORT}${url}`;
      const response = await fetch(absolute, {
        method,
        headers: { authorization: `Bearer ${credentials.apiKey}`, 'x-service-workspace': 'default', ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(30_000),
      });
      const text = await response.text();
      return { status: response.status, text, json: () => JSON.parse(text) };
    };
  });

  afterAll(async () => {
    if (platform?.process.exitCode === null) {
      platform.process.kill('SIGTERM');
      await platform.exited;
    }
    // Sandboxes are not the platform's children: they outlive it on purpose, and so do their
    // network namespaces and the node's bridge, removed here with them.
    const network = new SandboxNetwork({ dataDir, subnet: SANDBOX_SUBNET });
    await network.start();
    const runtime = testRuntime(dataDir, { network });
    for (const sandbox of await runtime.list()) await runtime.remove(sandbox.id).catch(() => undefined);
    await runtime.close();
    await network.tearDown();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** A job of `tasks` tasks sleeping `sleepMs` each, two at a time, its code deployed; returns the execution's URL. */
  async function startJob(tasks: number, sleepMs: number): Promise<string> {
    const created = await api('POST', '/v0/jobs', { metadata: { name: 'crash-job' }, spec: { runtime: { command: ['node', 'task.js'], memory: 256, maxConcurrentTasks: 2 } } });
    expect(created.status).toBe(200);
    const url = `postgres://hangar:${encodeURIComponent(servicePasswords(dataDir).postgres)}@127.0.0.1:${platform.ports.HANGAR_POSTGRES_PORT}/hangar`;
    const pg = new Pool({ connectionString: url, max: 1 });
    try {
      const { rows } = await pg.query<{ id: string }>(`SELECT id FROM resources WHERE kind = 'jobs' AND name = 'crash-job'`);
      await deployJobCode(pg, dataDir, rows[0].id, { 'task.js': TASK });
    } finally {
      await pg.end();
    }
    const started = await api('POST', '/default/jobs/crash-job/executions', { id: 'through-crashes', tasks: Array.from({ length: tasks }, () => ({ sleepMs })) });
    expect(started.status).toBe(200);
    return '/default/jobs/crash-job/executions/through-crashes';
  }

  /** The sandbox runs a command through the sandbox gateway (resumed first if it went to standby). */
  async function sandboxAnswers(sandboxUrl: string, word: string): Promise<void> {
    await until(platform, `the sandbox to run a command (${word})`, async () => {
      const run = await api('POST', `${sandboxUrl}/process`, { command: `echo ${word}`, waitForCompletion: true });
      return run.status === 200 && run.json().exitCode === 0 && JSON.stringify(run.json()).includes(word) ? true : undefined;
    });
  }

  test("npm start's node worker registers itself with its load; its sandbox has a network of its own", async () => {
    const created = await api('POST', '/v0/sandboxes', { metadata: { name: 'net-box' }, spec: { runtime: { memory: 192 } } });
    expect(created.status).toBe(200);
    await until(platform, 'the sandbox to be deployed', async () => ((await api('GET', '/v0/sandboxes/net-box')).json().status === 'DEPLOYED' ? true : undefined));
    // Heartbeats come every 2 s: the new sandbox shows in the node's load by the next one.
    const node = await until(platform, 'the node to count the sandbox', async () => {
      const nodes = (await api('GET', '/v0/nodes')).json() as { id: string; state: string; load: { sandboxes: number; memoryCommittedBytes: number } }[];
      return nodes.find((entry) => entry.id === 'local' && entry.load.sandboxes >= 1);
    });
    expect(node!.state).toBe('READY');
    expect(node!.load.memoryCommittedBytes).toBeGreaterThanOrEqual(192 * 2 ** 20);
    // The node's DNS answerer on its bridge, as a sandbox with the node's network has by default.
    const gateway = SANDBOX_SUBNET.replace(/\.0\/24$/, '.1');
    const run = await api('POST', `${created.json().metadata.url}/process`, { command: 'cat /etc/resolv.conf', waitForCompletion: true });
    expect(JSON.stringify(run.json())).toContain(`nameserver ${gateway}`);
    expect((await api('DELETE', '/v0/sandboxes/net-box')).status).toBe(200);
  });

  test('each of PostgreSQL, ClickHouse and Temporal is restarted by itself; nothing is lost: events counted once, the job done, the sandbox there', async () => {
    const created = await api('POST', '/v0/sandboxes', { metadata: { name: 'crash-box' }, spec: { runtime: { memory: 256 } } });
    expect(created.status).toBe(200);
    const sandboxUrl: string = created.json().metadata.url;
    await until(platform, 'the sandbox to be deployed', async () => ((await api('GET', '/v0/sandboxes/crash-box')).json().status === 'DEPLOYED' ? true : undefined));
    await sandboxAnswers(sandboxUrl, 'before');

    const hour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000);
    const load = new IngestionLoad((body) => api('POST', `/v0/accounts/${accountId}/usage-events`, body), 'crash-load', new Date(hour.getTime() + 60_000).toISOString());
    const execution = await startJob(6, 8_000);
    await load.acceptsMore(200);

    for (const service of SERVICES) {
      const pid = Number(fs.readFileSync(path.join(dataDir, service, 'service.pid'), 'utf8'));
      process.kill(pid, 'SIGKILL');
      await until(platform, `${service} to be back`, async () => platform.output().includes(`${service} is back`) || undefined);
      expect(platform.output()).toMatch(new RegExp(`\\[stack\\] ${service} died \\(signal SIGKILL; see [^)]+\\); restarting in 0\\.5s \\(restart 1 of 5 in 60s\\)`));
      expect(isAlive(pid)).toBe(false);
      // The platform answers again, ingestion goes on, and the sandbox is reachable.
      await until(platform, 'the management API to answer', async () => ((await api('GET', '/v0/workspaces')).status === 200 ? true : undefined));
      await load.acceptsMore(200);
      await sandboxAnswers(sandboxUrl, `after-${service}`);
    }
    const accepted = await load.stop();
    expect(load.wrongAnswers).toEqual([]);

    const done = await until(platform, 'the job to finish', async () => {
      const body = (await api('GET', execution)).json();
      return ['succeeded', 'failed', 'cancelled'].includes(body.status) ? body : undefined;
    }, 120_000);
    expect(done.status).toBe('succeeded');
    expect(done.stats).toEqual(expect.objectContaining({ total: 6, success: 6, failure: 0 }));

    const window = `startTime=${hour.toISOString()}&endTime=${new Date(hour.getTime() + 3_600_000).toISOString()}`;
    const metrics = `/v0/accounts/${accountId}/metrics?${window}&groupBy=billing_dimension&resourceName=crash-load`;
    let counted = '';
    await until(platform, `all ${accepted} accepted events to be counted`, async () => {
      const reply = await api('GET', metrics);
      counted = reply.text;
      return reply.status === 200 && reply.json().summary.totalUsage.hours === accepted ? true : undefined;
    }).catch((err) => {
      throw new Error(`${accepted} events accepted; the metrics say ${counted.slice(0, 500)}: ${(err as Error).message}`);
    });
    // Nothing died but what was killed: no platform process had to be restarted, no service was given up.
    expect(platform.output()).not.toMatch(/exited \([^)]*\); restarting/);
    expect(occurrences(platform.output(), '[stack]')).toBe(2 * SERVICES.length);
  });

  test('a service that keeps dying makes npm start stop everything, saying which and why', async () => {
    const ours = platformProcesses(platform.process.pid!);
    const pidFile = path.join(dataDir, 'postgres', 'service.pid');
    const backs = () => occurrences(platform.output(), 'postgres is back');
    for (let kills = 0; platform.process.exitCode === null && kills < 10; kills++) {
      const before = backs();
      process.kill(Number(fs.readFileSync(pidFile, 'utf8')), 'SIGKILL');
      await eventually('postgres back, or the platform stopped', async () => (backs() > before || platform.process.exitCode !== null ? true : undefined), 60_000);
    }
    expect(await platform.exited).toBe(1);
    const output = platform.output();
    expect(output).toMatch(/\[stack\] postgres died \(signal SIGKILL; see [^)]+\) after 5 restarts in 60s: giving up/);
    expect(output).toContain('postgres keeps dying: stopping');
    expect(output).toMatch(/\] stopped\n/);
    // Every service and platform process went (the sandboxes stay, on purpose).
    expect(ours.length).toBeGreaterThanOrEqual(1 + SERVICES.length + 3);
    expect(ours.filter(isAlive)).toEqual([]);
  });
});

/** `root` and its descendants, less the sandboxes (bubblewrap and what runs inside), which are meant to outlive it. */
function platformProcesses(root: number): number[] {
  const sandboxed = new Set<number>();
  return processTreePids(root).filter((pid) => {
    const parent = Number(statFields(pid)?.[1]);
    if (sandboxed.has(parent) || commandLineOf(pid)?.includes('bwrap')) sandboxed.add(pid);
    return !sandboxed.has(pid);
  });
}
