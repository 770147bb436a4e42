import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { findOnPath } from './executables';
import { processTable, processTree } from './proc';

/** A terminal's size in character cells. */
export interface TerminalSize {
  cols: number;
  rows: number;
}

/**
 * How a pseudo-terminal is had without a native module. Node cannot unlock a PTY (that takes an
 * ioctl), so a program of the image opens one, runs the shell on it and relays its master side
 * over pipes: util-linux `script` (in every Debian-based image through the essential bsdutils, in
 * every RPM-based one, and a busybox applet in Alpine) or, failing it, Python's `pty` module. The
 * size is set on the terminal itself with `stty` (coreutils or busybox): the kernel then signals
 * SIGWINCH to the program in the foreground, as a terminal emulator's resize does.
 */
interface PtyHelper {
  program: string;
  /** The arguments that run `command` (a /bin/sh command line) on a new PTY, relaying it over stdin/stdout; `found` is the program's path. */
  args(command: string, found: string): string[];
}

/** Whether a program found on the PATH is a busybox applet (a link to busybox). */
function isBusybox(found: string): boolean {
  try {
    return path.basename(fs.realpathSync(found)).startsWith('busybox');
  } catch {
    return false;
  }
}

const PTY_HELPERS: readonly PtyHelper[] = [
  // -q: no banner; -f: flush at once; the typescript goes nowhere; -e (util-linux only, busybox's
  // has no such option): exit with the shell's status, which the terminal's close then reports.
  { program: 'script', args: (command, found) => [isBusybox(found) ? '-qfc' : '-qefc', command, '/dev/null'] },
  { program: 'python3', args: (command) => ['-c', 'import os,pty,sys; sys.exit(os.waitstatus_to_exitcode(pty.spawn(["/bin/sh", "-c", sys.argv[1]])))', command] },
];

/** The PTY helper this image has, or undefined when it has none. */
export function findPtyHelper(searchPath: string): (PtyHelper & { path: string }) | undefined {
  for (const helper of PTY_HELPERS) {
    const found = findOnPath(helper.program, searchPath);
    if (found) return { ...helper, path: found };
  }
  return undefined;
}

/** The shell a terminal runs when none is asked for: the image's bash, else its sh. */
export function defaultShell(): string {
  return ['/bin/bash', '/bin/sh'].find((shell) => fs.existsSync(shell)) ?? '/bin/sh';
}

/** How long a resize waits for the shell to be running on its terminal. */
const DEVICE_WAIT_MS = 5_000;

const quote = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;

export interface TerminalOptions {
  shell: string;
  workingDir: string;
  env: Record<string, string>;
  size: TerminalSize;
}

/**
 * An interactive shell on a pseudo-terminal: what is typed goes in, what the terminal shows comes
 * out (the terminal's own echo included), its size can change, and closing it ends the shell and
 * everything started from it.
 */
export class TerminalSession {
  private readonly helper: ChildProcess;
  private closed = false;
  /** The terminal's device (/dev/pts/N), found once the shell runs on it. */
  private device?: string;
  /** What was asked of the terminal, applied one after the other. */
  private queue: Promise<void> = Promise.resolve();
  /** Where the shell's programs (and `stty`) are found. */
  private readonly searchPath: string;

  constructor(options: TerminalOptions, onOutput: (text: string) => void, onExit: (code: number | null) => void) {
    this.searchPath = options.env.PATH ?? '/usr/local/bin:/usr/bin:/bin';
    const helper = findPtyHelper(this.searchPath);
    if (!helper) throw new Error('this image has no program to open a terminal with (script or python3)');
    const { cols, rows } = options.size;
    const command = `stty rows ${rows} cols ${cols} 2>/dev/null; exec ${quote(options.shell)}`;
    this.helper = spawn(helper.path, helper.args(command, helper.path), {
      cwd: options.workingDir,
      // `script` runs its command with $SHELL -c.
      env: { TERM: 'xterm-256color', ...options.env, SHELL: '/bin/sh' },
      // Its own process group: closing the terminal signals all of it.
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    // The terminal's output on stdout; the helper's own complaints, if any, on stderr.
    const decoders = [new StringDecoder('utf8'), new StringDecoder('utf8')];
    this.helper.stdout!.on('data', (data: Buffer) => onOutput(decoders[0].write(data)));
    this.helper.stderr!.on('data', (data: Buffer) => onOutput(decoders[1].write(data)));
    this.helper.stdin!.on('error', () => undefined);
    const ended = (code: number | null = null) => {
      if (this.closed) return;
      this.closed = true;
      onExit(code);
    };
    // The helper exits with the shell's status (util-linux script does; the Python one passes it on).
    this.helper.once('exit', (code) => ended(code));
    // A helper that could not start at all (removed meanwhile): said on the terminal, then closed.
    this.helper.once('error', (err) => {
      onOutput(`the terminal could not start: ${err.message}\r\n`);
      ended(null);
    });
  }

  /**
   * Stops reading the terminal until `resume`: its buffer fills, and a program writing to it
   * waits, as it would behind a slow terminal. So a client that reads slower than the shell
   * prints (`cat` of a large file) costs the agent no memory.
   */
  pause(): void {
    this.helper.stdout!.pause();
  }

  resume(): void {
    this.helper.stdout!.resume();
  }

  /** Keys typed, after whatever was asked before them (a resize sent first is in effect first). */
  write(text: string): Promise<void> {
    return this.inOrder(async () => {
      if (!this.closed) this.helper.stdin!.write(text);
    });
  }

  /** Sets the terminal's size, in order with the input; the program in its foreground is told with SIGWINCH. */
  resize(size: TerminalSize): Promise<void> {
    return this.inOrder(() => this.applySize(size));
  }

  private inOrder(step: () => Promise<void>): Promise<void> {
    const done = this.queue.then(step);
    this.queue = done.catch(() => undefined);
    return done;
  }

  private async applySize({ cols, rows }: TerminalSize): Promise<void> {
    const device = await this.findDevice();
    if (!device) return;
    // O_NOCTTY: opening the terminal must not make it the agent's own.
    const handle = await fsp.open(device, fs.constants.O_RDWR | fs.constants.O_NOCTTY);
    try {
      await new Promise<void>((resolve) => {
        const stty = spawn(findOnPath('stty', this.searchPath) ?? 'stty', ['rows', String(rows), 'cols', String(cols)], { stdio: [handle.fd, 'ignore', 'ignore'] });
        stty.once('exit', () => resolve());
        stty.once('error', () => resolve());
      });
    } finally {
      await handle.close();
    }
  }

  /**
   * The PTY the shell runs on: the standard input of the helper's descendants, looked for until
   * one has it (a resize may come before the helper started the shell).
   */
  private async findDevice(): Promise<string | undefined> {
    const deadline = Date.now() + DEVICE_WAIT_MS;
    while (!this.device && !this.closed && this.helper.pid !== undefined && Date.now() < deadline) {
      // Breadth first: the shell, before anything it started with its input elsewhere.
      for (const pid of processTree(this.helper.pid, await processTable()).slice(1)) {
        const target = await fsp.readlink(`/proc/${pid}/fd/0`).catch(() => '');
        if (!target.startsWith('/dev/pts/')) continue;
        this.device = target;
        break;
      }
      if (!this.device) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    if (!this.device && !this.closed) throw new Error('the terminal is not ready');
    return this.device;
  }

  /** Ends the shell and everything started from it (background jobs in sessions of their own too). */
  async close(): Promise<void> {
    const pid = this.helper.pid;
    // Once the helper exited, its pid may be another process's: nothing is signalled by it.
    if (pid === undefined || this.closed) return;
    const tree = processTree(pid, await processTable());
    for (const target of [-pid, ...tree]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
}
