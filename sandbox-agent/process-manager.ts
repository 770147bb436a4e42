import { spawn, type ChildProcess } from 'node:child_process';
import fsp from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import { StringDecoder } from 'node:string_decoder';
import { KEEP_ALIVE_DEFAULT_TIMEOUT_SECONDS, MAX_PROCESS_TIMEOUT_SECONDS } from './contract/limits';
import type { ProcessRecord, ProcessRequest, ProcessStatus } from './contract/process';
import { HttpError, badRequest, field } from './http';
import { OutputLog } from './output-log';
import { processTable, processTree, socketsOfProcessTree } from './proc';
import { StdinPipe } from './process-stdin';

const DEFAULT_MAX_RESTARTS = 3;
/** How long output still drains after the process exits, when a background child keeps its pipes open. */
const DRAIN_AFTER_EXIT_MS = 100;
const STOP_GRACE_MS = 3_000;
/** Finished processes remembered for GET /process and their logs, and the output they may hold in all. */
const KEEP_FINISHED = 200;
const KEEP_FINISHED_OUTPUT = 32 * 1024 * 1024;

/**
 * Under memory pressure the OOM killer should pick the user's commands, not the API that
 * serves the sandbox: they start with a higher score. Raising one's own score needs no
 * privilege (lowering the agent's would).
 */
export const OOM_PREFER_USER = 'echo 500 >/proc/self/oom_score_adj 2>/dev/null\n';

export function parseProcessRequest(body: Record<string, unknown>): ProcessRequest {
  const command = field.optionalString(body, 'command');
  if (!command || !command.trim()) throw badRequest("'command' is required");
  const name = field.optionalString(body, 'name');
  if (name !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(name) ) {
    throw badRequest("'name' must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit");
  }
  if (name !== undefined && /^\d+$/.test(name)) throw badRequest("'name' must not be only digits (it would read as a pid)");
  let env: Record<string, string> | undefined;
  if (body.env !== undefined && body.env !== null) {
    if (typeof body.env !== 'object' || Array.isArray(body.env)) throw badRequest("'env' must be an object of strings");
    env = {};
    for (const [key, value] of Object.entries(body.env as Record<string, unknown>)) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw badRequest(`'env': '${key}' is not a valid variable name`);
      if (typeof value !== 'string') throw badRequest(`'env.${key}' must be a string`);
      env[key] = value;
    }
  }
  let waitForPorts: number[] | undefined;
  if (body.waitForPorts !== undefined && body.waitForPorts !== null) {
    if (!Array.isArray(body.waitForPorts) || !body.waitForPorts.every((p) => Number.isInteger(p) && p > 0 && p < 65536)) {
      throw badRequest("'waitForPorts' must be an array of port numbers (1-65535)");
    }
    waitForPorts = body.waitForPorts as number[];
  }
  const keepAlive = field.optionalBoolean(body, 'keepAlive');
  return {
    command,
    name,
    workingDir: field.optionalString(body, 'workingDir'),
    env,
    waitForCompletion: field.optionalBoolean(body, 'waitForCompletion'),
    timeout: processTimeout(body, keepAlive),
    keepAlive,
    waitForPorts,
    restartOnFailure: field.optionalBoolean(body, 'restartOnFailure'),
    stdin: field.optionalBoolean(body, 'stdin'),
    maxRestarts: field.optionalNumber(body, 'maxRestarts', (n) => Number.isInteger(n) && n >= 0 && n <= 1000, 'an integer from 0 to 1000'),
  };
}

/** Seconds the process may run (undefined: no limit), as the reference reads `timeout` and `keepAlive`. */
function processTimeout(body: Record<string, unknown>, keepAlive: boolean | undefined): number | undefined {
  const timeout = field.optionalNumber(body, 'timeout', (n) => n >= 0 && n <= MAX_PROCESS_TIMEOUT_SECONDS, `a number of seconds from 0 (no limit) to ${MAX_PROCESS_TIMEOUT_SECONDS}`);
  if (timeout === undefined && keepAlive) return KEEP_ALIVE_DEFAULT_TIMEOUT_SECONDS;
  return timeout || undefined;
}

/** One command started through the API, across its restarts. */
export class ManagedProcess {
  pid = 0;
  /** Every pid this process had (restarts get new ones); any of them finds it. */
  readonly pids: number[] = [];
  name = '';
  status: ProcessStatus = 'running';
  readonly startedAt = new Date().toISOString();
  completedAt: string | null = null;
  exitCode: number | null = null;
  restartCount = 0;
  readonly output: OutputLog;
  /** Its stdin, when it was started with `stdin: true` (otherwise stdin is /dev/null). */
  readonly stdin?: StdinPipe;
  readonly finished: Promise<void>;
  private markFinished!: () => void;
  private requestedEnd?: 'stopped' | 'killed';
  private timer?: NodeJS.Timeout;

  constructor(
    readonly request: ProcessRequest,
    readonly workingDir: string,
    private readonly env: Record<string, string>,
    maxOutputBytes: number,
  ) {
    this.output = new OutputLog(maxOutputBytes);
    if (request.stdin) this.stdin = new StdinPipe();
    this.finished = new Promise((resolve) => (this.markFinished = resolve));
  }

  get restartOnFailure(): boolean {
    return this.request.restartOnFailure ?? false;
  }

  get maxRestarts(): number {
    return this.request.maxRestarts ?? (this.restartOnFailure ? DEFAULT_MAX_RESTARTS : 0);
  }

  async launch(): Promise<void> {
    await this.spawnOnce();
    if (this.request.timeout) {
      this.timer = setTimeout(() => void this.kill(), this.request.timeout * 1000);
    }
  }

  private spawnOnce(): Promise<void> {
    // detached: its own session and process group, so the whole group can be signalled.
    const child = spawn('/bin/sh', ['-c', OOM_PREFER_USER + this.request.command], {
      cwd: this.workingDir,
      env: this.env,
      detached: true,
      stdio: [this.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    return new Promise((resolve, reject) => {
      if (child.pid === undefined) {
        child.once('error', (err) => reject(new HttpError(500, `could not start the process: ${err.message}`)));
        return;
      }
      this.pid = child.pid;
      this.pids.push(child.pid);
      if (this.stdin) this.stdin.attach(child.stdin!);
      this.capture(child);
      resolve();
    });
  }

  private capture(child: ChildProcess): void {
    const decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
    child.stdout!.on('data', (data: Buffer) => this.output.append('stdout', decoders.stdout.write(data)));
    child.stderr!.on('data', (data: Buffer) => this.output.append('stderr', decoders.stderr.write(data)));
    let done = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    const settle = () => {
      if (done || !exit) return;
      done = true;
      this.output.append('stdout', decoders.stdout.end());
      this.output.append('stderr', decoders.stderr.end());
      this.exited(exit.code, exit.signal);
    };
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      // Normally 'close' follows at once; a background child holding the pipes must not hold the result.
      setTimeout(settle, DRAIN_AFTER_EXIT_MS);
    });
    child.on('close', settle);
  }

  private exited(code: number | null, signal: NodeJS.Signals | null): void {
    const exitCode = code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0);
    if (!this.requestedEnd && exitCode !== 0 && this.restartOnFailure && this.restartCount < this.maxRestarts) {
      this.restartCount++;
      this.spawnOnce().catch((err: Error) => {
        this.output.append('stderr', `restart failed: ${err.message}\n`);
        this.finish(exitCode, 'failed');
      });
      return;
    }
    this.finish(exitCode, this.requestedEnd ?? (exitCode === 0 ? 'completed' : 'failed'));
  }

  private finish(exitCode: number, status: ProcessStatus): void {
    clearTimeout(this.timer);
    this.exitCode = exitCode;
    this.status = status;
    this.completedAt = new Date().toISOString();
    this.output.end();
    this.stdin?.release();
    this.markFinished();
  }

  get isRunning(): boolean {
    return this.status === 'running';
  }

  /** SIGTERM to the process group and every descendant, SIGKILL after a grace period. */
  async stop(graceMs = STOP_GRACE_MS): Promise<void> {
    if (!this.isRunning) return;
    this.requestedEnd ??= 'stopped';
    await this.signalTree('SIGTERM');
    const ended = await Promise.race([this.finished.then(() => true), sleep(graceMs).then(() => false)]);
    if (!ended) await this.kill();
  }

  /** SIGKILL to the process group and every descendant (also those that left the group). */
  async kill(): Promise<void> {
    if (!this.isRunning) return;
    this.requestedEnd ??= 'killed';
    await this.signalTree('SIGKILL');
    await this.finished;
  }

  private async signalTree(signal: NodeJS.Signals): Promise<void> {
    const tree = processTree(this.pid, await processTable());
    for (const target of [-this.pid, ...tree]) {
      try {
        process.kill(target, signal);
      } catch {
        // Already gone.
      }
    }
  }

  /**
   * Resolves when every port listens (by this process or a descendant), it ends or restarts (the
   * attempt to listen failed), or the deadline passes. Polls often at first (a workload starting
   * from zero has a request waiting on this), then every 50 ms.
   */
  async waitForPorts(ports: number[], deadline: number): Promise<void> {
    const began = Date.now();
    const restarts = this.restartCount;
    while (this.isRunning && this.restartCount === restarts && Date.now() < deadline) {
      const listening = new Set((await socketsOfProcessTree(this.pid)).filter((s) => s.state === 'LISTEN').map((s) => s.port));
      if (ports.every((port) => listening.has(port))) return;
      await Promise.race([sleep(Date.now() - began < 2_000 ? 5 : 50), this.finished]);
    }
  }

  view(): ProcessRecord {
    return {
      pid: this.pid,
      name: this.name,
      command: this.request.command,
      status: this.status,
      startedAt: this.startedAt,
      completedAt: this.completedAt,
      exitCode: this.exitCode,
      workingDir: this.workingDir,
      logs: this.output.text(),
      stdout: this.output.text('stdout'),
      stderr: this.output.text('stderr'),
      restartOnFailure: this.restartOnFailure,
      maxRestarts: this.maxRestarts,
      restartCount: this.restartCount,
      keepAlive: this.request.keepAlive ?? false,
      stdin: this.stdin !== undefined,
    };
  }
}

export interface ProcessManagerOptions {
  /** The sandbox's environment as it is now: an update of the sandbox's envs reaches every process started after it. */
  env: () => Record<string, string>;
  defaultWorkingDir: string;
  /** Output kept per process for late readers. */
  maxOutputBytes?: number;
}

/** Every process started through the API (or the MCP tools) of this sandbox. */
export class ProcessManager {
  private readonly processes: ManagedProcess[] = [];

  constructor(private readonly options: ProcessManagerOptions) {}

  async start(request: ProcessRequest): Promise<ManagedProcess> {
    if (request.name && this.processes.some((p) => p.name === request.name && p.isRunning)) {
      throw badRequest(`a process named '${request.name}' is already running`);
    }
    const workingDir = request.workingDir || this.options.defaultWorkingDir;
    const stats = await fsp.stat(workingDir).catch(() => undefined);
    if (!stats?.isDirectory()) throw badRequest(`'workingDir' ${workingDir} is not an existing directory`);
    const managed = new ManagedProcess(request, workingDir, { ...this.options.env(), ...request.env }, this.options.maxOutputBytes ?? 8 * 1024 * 1024);
    await managed.launch();
    managed.name = request.name ?? `proc-${managed.pid}`;
    this.processes.push(managed);
    this.forgetOldFinished();
    void managed.finished.then(() => this.forgetOldFinished());
    return managed;
  }

  /** By pid (current or earlier, across restarts) or by name (the latest with it). */
  find(pidOrName: string): ManagedProcess | undefined {
    if (/^\d+$/.test(pidOrName)) {
      const pid = Number(pidOrName);
      return this.processes.findLast((p) => p.pids.includes(pid));
    }
    return this.processes.findLast((p) => p.name === pidOrName);
  }

  get(pidOrName: string): ManagedProcess {
    const found = this.find(pidOrName);
    if (!found) throw new HttpError(404, `process '${pidOrName}' not found`);
    return found;
  }

  list(): ManagedProcess[] {
    return [...this.processes];
  }

  /** The agent's memory counts against the sandbox's limit: old output goes first. */
  private forgetOldFinished(): void {
    const finished = this.processes.filter((p) => !p.isRunning);
    let kept = finished.reduce((sum, p) => sum + p.output.size, 0);
    for (const [i, old] of finished.entries()) {
      if (finished.length - i <= KEEP_FINISHED && kept <= KEEP_FINISHED_OUTPUT) break;
      this.processes.splice(this.processes.indexOf(old), 1);
      kept -= old.output.size;
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
