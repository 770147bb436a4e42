import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { parentDeathPrefix } from './stack/service-process';
import { settlesWithin } from './stack/timing';
import { decideRestart, NO_CRASH_YET, type RestartPolicy } from './restart-policy';

/**
 * A platform process (API server, control worker) kept running by `npm start`: restarted with
 * exponential backoff when it crashes, its output shown with its name in front, and, like the
 * services, bound to the supervisor's life by the parent-death signal.
 */
export interface ChildSpec {
  name: string;
  argv: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string;
  /** Where the child's output lines go. */
  output: (line: string) => void;
  /** Where supervision events (crash, restart) go. */
  log: (line: string) => void;
}

export interface SupervisedChild {
  readonly name: string;
  /** The running process, if any (none while waiting to restart). */
  pid(): number | undefined;
  /** Stops it for good: SIGTERM, then SIGKILL for its group after the timeout. */
  stop(timeoutMs?: number): Promise<void>;
}

/** Platform processes are always worth another try: a growing delay, and no budget to give up on. */
export const CHILD_RESTART_POLICY: RestartPolicy = { firstDelayMs: 1_000, maxDelayMs: 30_000, stableAfterMs: 60_000 };

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // The group is empty.
  }
}

export function superviseChild(spec: ChildSpec): SupervisedChild {
  let current: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let stopped = false;
  let restarts = NO_CRASH_YET;
  let restartTimer: NodeJS.Timeout | undefined;

  const launch = () => {
    const startedAt = Date.now();
    const argv = [...parentDeathPrefix('SIGTERM'), ...spec.argv];
    const child = spawn(argv[0], argv.slice(1), { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: spec.env, cwd: spec.cwd });
    current = child;
    for (const stream of [child.stdout, child.stderr]) {
      readline.createInterface({ input: stream }).on('line', (line) => spec.output(`[${spec.name}] ${line}`));
    }
    child.once('error', (err) => spec.log(`${spec.name}: ${err.message}`));
    // 'exit', not 'close': forked helpers may hold the output pipes open long after the child died.
    exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        current = undefined;
        // Whatever it forked goes with it, so that a restart finds its ports free.
        if (child.pid) killGroup(child.pid);
        resolve();
        if (stopped) return;
        const next = decideRestart(CHILD_RESTART_POLICY, restarts, { at: Date.now(), upForMs: Date.now() - startedAt });
        restarts = next.state;
        // Without a budget the policy always restarts.
        const delay = next.decision.restart ? next.decision.delayMs : CHILD_RESTART_POLICY.maxDelayMs;
        spec.log(`${spec.name} exited (${signal ? `signal ${signal}` : `exit code ${code}`}); restarting in ${delay / 1000}s`);
        restartTimer = setTimeout(launch, delay);
      }),
    );
  };

  launch();
  return {
    name: spec.name,
    pid: () => current?.pid,
    stop: async (timeoutMs = 15_000) => {
      stopped = true;
      clearTimeout(restartTimer);
      const child = current;
      if (!child?.pid) return;
      child.kill('SIGTERM');
      if (!(await settlesWithin(exited, timeoutMs))) {
        spec.log(`${spec.name} did not stop within ${timeoutMs / 1000}s; killed`);
        killGroup(child.pid);
        await exited;
      }
    },
  };
}
