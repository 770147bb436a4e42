import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import readline from 'node:readline';
import { summarize, type LatencySummary } from './stats';

/** What one load generator sends, over and over. */
export interface LoadTarget {
  address: { host: string; port: number } | { socketPath: string };
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Requests in flight at once, each on its own keep-alive connection (closed loop). */
  concurrency: number;
}

/** One timed stretch of load: requests completed, their latencies (ms) and the wall time. */
interface LoadRound {
  count: number;
  wallMs: number;
  samples: number[];
}

type Reply = LoadRound | { error: string };

/**
 * A closed-loop HTTP load generator in a process of its own, so the load it makes does not share
 * an event loop with what it measures (in one process, a benchmark mostly measures contention).
 * Driven over stdin/stdout with one JSON line each way, so it also runs behind a wrapper such as
 * `nsenter` (a sandbox's network namespace). The target comes on stdin too: it may carry a
 * credential, which does not belong on a command line.
 */
export class LoadProcess {
  private readonly pending: ((reply: Reply) => void)[] = [];
  private readonly exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    readonly label: string,
    readonly concurrency: number,
  ) {
    readline.createInterface({ input: child.stdout! }).on('line', (line) => this.pending.shift()?.(JSON.parse(line) as Reply));
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        for (const reply of this.pending.splice(0)) reply({ error: `the load generator exited (${signal ?? code})` });
        resolve();
      }),
    );
  }

  /** `wrapper`: a command the generator runs under (its argv before node's). */
  static start(label: string, target: LoadTarget, wrapper: string[] = []): LoadProcess {
    const argv = [...wrapper, process.execPath, __filename];
    const child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
    child.stdin!.write(`${JSON.stringify(target)}\n`);
    return new LoadProcess(child, label, target.concurrency);
  }

  /** Keeps `concurrency` requests in flight for `durationMs`; fails on the first answer other than 2xx. */
  async run(durationMs: number): Promise<LoadRound> {
    const reply = await new Promise<Reply>((resolve) => {
      this.pending.push(resolve);
      this.child.stdin!.write(`${JSON.stringify({ durationMs })}\n`);
    });
    if ('error' in reply) throw new Error(`${this.label}: ${reply.error}`);
    return reply;
  }

  get pid(): number {
    return this.child.pid!;
  }

  async close(): Promise<void> {
    this.child.stdin!.end();
    await this.exited;
  }
}

export interface PhasedLoadOptions {
  /** Untimed load on each generator first (connections opened, JIT warm, caches filled). */
  warmupMs: number;
  /** Timed load per generator, split into `rounds` slices run in turns. */
  durationMs: number;
  /**
   * Slices run in turns with the other generators' slices (a different one first in each round),
   * so every figure sees the same background load even on a busy machine.
   */
  rounds: number;
}

export interface LoadFigures extends LatencySummary {
  /** CPU time per request (ms) of each part the meter reads, over the timed slices. */
  cpuMsPerRequest: Record<string, number>;
}

/** Cumulative CPU time (ms) of the parts of interest, read before and after each slice of `load`. */
export type CpuMeter = (load: LoadProcess) => Record<string, number>;

/** Runs the generators one at a time, in interleaved rounds; their figures by label. */
export async function measureLoads(loads: LoadProcess[], options: PhasedLoadOptions, meter: CpuMeter = () => ({})): Promise<Map<string, LoadFigures>> {
  for (const load of loads) await load.run(options.warmupMs);
  const rounds = loads.map(() => [] as LoadRound[]);
  const cpuMs = loads.map(() => new Map<string, number>());
  for (let round = 0; round < options.rounds; round++) {
    for (let turn = 0; turn < loads.length; turn++) {
      const i = (turn + round) % loads.length;
      const before = meter(loads[i]);
      rounds[i].push(await loads[i].run(options.durationMs / options.rounds));
      for (const [part, ms] of Object.entries(meter(loads[i]))) cpuMs[i].set(part, (cpuMs[i].get(part) ?? 0) + ms - before[part]);
    }
  }
  return new Map(
    loads.map((load, i) => {
      const samples = Float64Array.from(rounds[i].flatMap((r) => r.samples));
      const wallMs = rounds[i].reduce((sum, r) => sum + r.wallMs, 0);
      const summary = summarize(samples, wallMs, load.concurrency);
      return [load.label, { ...summary, cpuMsPerRequest: Object.fromEntries([...cpuMs[i]].map(([part, ms]) => [part, ms / samples.length])) }];
    }),
  );
}

/** The generator's side: the target on the first line, then one timed run per line. */
function serve(): void {
  let target: LoadTarget | undefined;
  let agent: http.Agent | undefined;
  let queue = Promise.resolve();
  readline.createInterface({ input: process.stdin }).on('line', (line) => {
    if (!target) {
      target = JSON.parse(line) as LoadTarget;
      agent = new http.Agent({ keepAlive: true, maxSockets: target.concurrency });
      return;
    }
    const { durationMs } = JSON.parse(line) as { durationMs: number };
    queue = queue.then(async () => {
      const reply = await timedRun(target!, agent!, durationMs).catch((err: Error) => ({ error: err.message }));
      process.stdout.write(`${JSON.stringify(reply)}\n`);
    });
  }).on('close', () => void queue.then(() => process.exit(0)));
}

async function timedRun(target: LoadTarget, agent: http.Agent, durationMs: number): Promise<LoadRound> {
  const options: http.RequestOptions = {
    ...target.address,
    agent,
    method: target.method,
    path: target.path,
    headers: { ...target.headers, 'content-length': String(Buffer.byteLength(target.body)) },
  };
  const samples: number[] = [];
  const began = performance.now();
  const deadline = began + durationMs;
  const loop = async () => {
    while (performance.now() < deadline) {
      const sent = performance.now();
      await request(options, target.body);
      samples.push(performance.now() - sent);
    }
  };
  await Promise.all(Array.from({ length: target.concurrency }, loop));
  return { count: samples.length, wallMs: performance.now() - began, samples: samples.map((ms) => Math.round(ms * 1000) / 1000) };
}

function request(options: http.RequestOptions, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request(options, (res) => {
      const status = res.statusCode ?? 0;
      res.resume();
      res.on('end', () => (status >= 200 && status < 300 ? resolve() : reject(new Error(`${options.method} ${options.path} answered ${status}`))));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

if (require.main === module) serve();
