import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { setprivBinary } from './binaries';
import { settlesWithin, sleep } from './timing';

/**
 * One long-running local service (PostgreSQL, ClickHouse, Temporal) as a child process.
 *
 * Each service gets its own process group (so a Ctrl-C in the terminal reaches only the
 * supervisor, which then stops services in order) and, unless kept on purpose, the kernel's
 * parent-death signal: if the supervisor dies, even by SIGKILL, the service receives its stop
 * signal. A pid file beside the data lets the next start find anything that still escaped.
 */
export interface ServiceSpec {
  name: string;
  /** The service's own command line. */
  argv: string[];
  /** Wrapper that switches the user (see identity.ts), or []. */
  runAs: string[];
  logFile: string;
  pidFile: string;
  /** Text that must appear in a process's command line for a pid from pidFile to be this service. */
  marker: string;
  /** The graceful stop signal: SIGINT is PostgreSQL's fast shutdown, SIGTERM for the others. */
  stopSignal: NodeJS.Signals;
  /** Deliver stopSignal to the service when this process dies. */
  bindToParent: boolean;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  stopTimeoutMs?: number;
}

export interface ServiceProcess {
  readonly name: string;
  readonly pid: number;
  /** Settles when the process is gone, with how it ended ('exit code 1', 'signal SIGKILL'). */
  readonly exited: Promise<string>;
  isRunning(): boolean;
  /** Graceful stop, then SIGKILL for the whole group after the timeout. Idempotent. */
  stop(): Promise<void>;
}

const LOG_ROTATE_BYTES = 20 * 1024 * 1024;
const DEFAULT_STOP_TIMEOUT_MS = 20_000;

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A zombie has exited and only waits for its parent to read its status.
  const state = statFields(pid)?.[0];
  return state !== undefined && state !== 'Z';
}

/**
 * The fields of /proc/<pid>/stat after the command name (state, ppid, pgrp, ..., utime at index
 * 11, stime at 12); undefined once the process is gone. The name may hold spaces and parentheses,
 * so the fields start after its last ')'.
 */
export function statFields(pid: number | string): string[] | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** `root` and every live process descended from it (a local service and the backends it forked). */
export function processTreePids(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(entry);
    if (!fields) continue; // ended meanwhile
    const ppid = Number(fields[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]) ?? []));
  return tree;
}

export function commandLineOf(pid: number): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return undefined;
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: nothing left in the group.
  }
}

function signalOne(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // ESRCH: already gone.
  }
}

async function waitGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
  return true;
}

/** Pid of a still-running service recorded in pidFile, when that process really is the service. */
export function findLeftover(pidFile: string, marker: string): number | undefined {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(pidFile, 'utf8').trim().split('\n')[0]);
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 1 || !isAlive(pid)) return undefined;
  return commandLineOf(pid)?.includes(marker) ? pid : undefined;
}

/** Stops a process this supervisor did not start (a leftover of an earlier run) and its group. */
export async function stopLeftover(pid: number, signal: NodeJS.Signals, timeoutMs = DEFAULT_STOP_TIMEOUT_MS): Promise<void> {
  signalOne(pid, signal);
  if (!(await waitGone(pid, timeoutMs))) {
    signalGroup(pid, 'SIGKILL');
    signalOne(pid, 'SIGKILL');
    await waitGone(pid, 5_000);
  }
  signalGroup(pid, 'SIGKILL');
}

function rotateIfLarge(logFile: string): void {
  try {
    if (fs.statSync(logFile).size > LOG_ROTATE_BYTES) fs.renameSync(logFile, `${logFile}.1`);
  } catch {
    // No log yet.
  }
}

/** argv prefix that makes the kernel send `signal` to the command when its parent dies. */
export function parentDeathPrefix(signal: NodeJS.Signals): string[] {
  return [setprivBinary(), `--pdeathsig=${signal.replace(/^SIG/, '')}`, '--'];
}

export async function launchService(spec: ServiceSpec): Promise<ServiceProcess> {
  rotateIfLarge(spec.logFile);
  // The parent-death setting comes after the user switch, which would otherwise clear it.
  const argv = [...spec.runAs, ...(spec.bindToParent ? parentDeathPrefix(spec.stopSignal) : []), ...spec.argv];
  const out = fs.openSync(spec.logFile, 'a');
  let child;
  try {
    child = spawn(argv[0], argv.slice(1), { detached: true, stdio: ['ignore', out, out], env: spec.env ?? process.env, cwd: spec.cwd });
  } finally {
    fs.closeSync(out);
  }
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (err) => reject(new Error(`cannot start ${spec.name} (${argv[0]}): ${err.message}`)));
  });
  const pid = child.pid as number;
  fs.writeFileSync(spec.pidFile, `${pid}\n`);
  // A service meant to outlive us must not hold our event loop open either.
  if (!spec.bindToParent) child.unref();
  let running = true;
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => {
      running = false;
      fs.rmSync(spec.pidFile, { force: true });
      resolve(signal ? `signal ${signal}` : `exit code ${code}`);
    });
  });
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      if (running) {
        signalOne(pid, spec.stopSignal);
        if (!(await settlesWithin(exited, spec.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS))) {
          signalGroup(pid, 'SIGKILL');
          await exited;
        }
      }
      // Helpers the service forked into its group must not outlive it.
      signalGroup(pid, 'SIGKILL');
    })();
    return stopping;
  };
  return { name: spec.name, pid, exited, isRunning: () => running, stop };
}


/** Runs a one-shot command (initdb) to completion, its output appended to logFile. */
export async function runOnce(name: string, argv: string[], logFile: string, timeoutMs = 120_000): Promise<void> {
  const out = fs.openSync(logFile, 'a');
  let child;
  try {
    child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', out, out] });
  } finally {
    fs.closeSync(out);
  }
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  try {
    const outcome = await new Promise<string>((resolve) => {
      child.once('error', (err) => resolve(err.message));
      child.once('exit', (code, signal) => resolve(code === 0 ? 'ok' : signal ? `signal ${signal}` : `exit code ${code}`));
    });
    if (outcome !== 'ok') throw new Error(`${name} failed (${outcome}); see ${logFile}`);
  } finally {
    clearTimeout(timer);
  }
}
