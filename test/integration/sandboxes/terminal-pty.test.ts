import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findPtyHelper, TerminalSession } from '../../../sandbox-agent/terminal';
import { eventually } from '../../helpers/workers';

// The terminal's PTY with each helper the agent may find in an image (sandbox-agent/terminal.ts),
// run on the host: a search path that holds only that helper (and stty) makes the agent pick it.
jest.setTimeout(30_000);

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'pty-helpers-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

/** Every terminal a test opened, closed after it whatever happened (a shell left running would hold jest). */
const opened: TerminalSession[] = [];
afterEach(async () => {
  for (const session of opened.splice(0)) await session.close();
});

function openTerminal(...args: ConstructorParameters<typeof TerminalSession>): TerminalSession {
  const session = new TerminalSession(...args);
  opened.push(session);
  return session;
}

/** A folder for a search path with links to these host programs, and nothing else. */
function searchPathWith(programs: string[]): string {
  const dir = fs.mkdtempSync(path.join(scratch, 'bin-'));
  for (const program of programs) {
    const found = findOnHost(program);
    if (!found) throw new Error(`the host has no ${program}`);
    fs.symlinkSync(found, path.join(dir, program));
  }
  return dir;
}

/** The system's own program first, as an image has it (a version manager's shims on PATH need more than themselves). */
function findOnHost(program: string): string | undefined {
  return ['/usr/bin', '/bin', ...(process.env.PATH ?? '').split(':')].map((dir) => path.join(dir, program)).find((file) => fs.existsSync(file));
}

test.each(['script', 'python3'])('with only %s, a shell runs on a terminal of the asked size and follows a resize', async (helper) => {
  const searchPath = searchPathWith([helper, 'stty']);
  expect(findPtyHelper(searchPath)?.program).toBe(helper);
  let shown = '';
  let exited = false;
  const session = openTerminal(
    { shell: '/bin/sh', workingDir: scratch, env: { PATH: searchPath, HOME: scratch }, size: { cols: 90, rows: 20 } },
    (text) => (shown += text),
    () => (exited = true),
  );
  const shows = (pattern: RegExp) => eventually(`the terminal shows ${pattern}`, async () => pattern.test(shown) || undefined, 10_000);
  await session.write('echo "first:"; stty size\r');
  await shows(/first:\r?\n20 90\r?\n/);
  await session.resize({ cols: 111, rows: 33 });
  await session.write('echo "then:"; stty size; exit\r');
  await shows(/then:\r?\n33 111\r?\n/);
  await eventually('the helper exited with the shell', async () => exited || undefined, 10_000);
});

test('an image with neither helper cannot open a terminal, and says why', () => {
  const searchPath = searchPathWith(['stty']);
  expect(findPtyHelper(searchPath)).toBeUndefined();
  expect(() => new TerminalSession({ shell: '/bin/sh', workingDir: scratch, env: { PATH: searchPath }, size: { cols: 80, rows: 24 } }, () => undefined, () => undefined)).toThrow(
    /script or python3/,
  );
});

test('a paused terminal is not read: a flood of output waits in the terminal, not in the agent, and flows on after resume', async () => {
  let shown = 0;
  let tail = '';
  const session = openTerminal(
    { shell: '/bin/sh', workingDir: scratch, env: { PATH: '/usr/bin:/bin', HOME: scratch }, size: { cols: 80, rows: 24 } },
    (text) => {
      shown += text.length;
      tail = (tail + text).slice(-200);
    },
    () => undefined,
  );
  await session.write('stty -echo\r');
  await eventually('the shell took stty -echo', async () => shown > 0 || undefined);
  session.pause();
  const before = shown;
  // 20 MB would reach the agent in well under the wait below if it were read.
  await session.write('head -c 20000000 /dev/zero | tr "\\0" x; echo; echo flood-""done\r');
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  expect(shown - before).toBeLessThan(1024 * 1024);
  session.resume();
  await eventually('the flood came through', async () => /flood-done/.test(tail) || undefined, 20_000);
  expect(shown - before).toBeGreaterThan(20_000_000);
});
