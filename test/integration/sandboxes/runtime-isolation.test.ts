import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import type { SandboxHandle } from '../../../runtime/sandbox-runtime';
import { callSandbox, exec, runtimeDataDir, sandboxSpec, testRuntime } from '../../helpers/sandbox-runtime';

// Real sandboxes on a busy 2-core machine: generous limits; no test asserts on time.
jest.setTimeout(30_000);

// Real escape attempts against real bubblewrap sandboxes: every test tries to reach something
// outside its sandbox and checks that it cannot.
const dataDir = runtimeDataDir('isolation');
let runtime: BwrapRuntime;
let a: SandboxHandle;
let b: SandboxHandle;
const hostSecret = path.join(dataDir, 'host-secret.txt');
const rootSecret = `/root/hangar-isolation-${process.pid}.txt`;

beforeAll(async () => {
  runtime = testRuntime(dataDir);
  fs.writeFileSync(hostSecret, 'host secret\n', { mode: 0o644 });
  fs.writeFileSync(rootSecret, 'root secret\n', { mode: 0o644 });
  [a, b] = await Promise.all([runtime.start(sandboxSpec()), runtime.start(sandboxSpec())]);
});

afterAll(async () => {
  for (const sandbox of await runtime.list()) await runtime.remove(sandbox.id);
  fs.rmSync(rootSecret, { force: true });
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('host files', () => {
  test('files of the host (data folder, /root, /etc/shadow) do not exist inside', async () => {
    for (const file of [hostSecret, rootSecret, '/etc/shadow', path.join(process.cwd(), 'package.json')]) {
      const result = await exec(a.socketPath, `cat '${file}'`);
      expect(result.exitCode).not.toBe(0);
      expect(result.stderr).toMatch(/No such file or directory/);
    }
    const listing = await exec(a.socketPath, 'ls -a /');
    expect(listing.stdout.split('\n').filter(Boolean).sort()).toEqual(
      ['.', '..', 'app', 'bin', 'dev', 'etc', 'home', 'lib', 'lib64', 'opt', 'proc', 'run', 'sbin', 'tmp', 'usr', 'var', 'workspace'].filter(
        (name) => name !== 'lib64' || fs.existsSync('/lib64'),
      ),
    );
  });

  test("/etc is the sandbox's own: no host accounts", async () => {
    const hostUsers = fs.readFileSync('/etc/passwd', 'utf8').split('\n').map((line) => line.split(':')[0]).filter(Boolean);
    const passwd = (await exec(a.socketPath, 'cat /etc/passwd')).stdout;
    const inside = passwd.split('\n').map((line) => line.split(':')[0]).filter(Boolean);
    expect(inside.sort()).toEqual(['nobody', 'root', 'user']);
    expect(hostUsers.filter((u) => !['nobody', 'root', 'user'].includes(u)).some((u) => inside.includes(u))).toBe(false);
  });

  test('the image is read-only and the user is unprivileged', async () => {
    // /app, where a workload's code appears (empty here), is read-only too.
    expect((await exec(a.socketPath, 'ls -A /app')).stdout).toBe('');
    const code = await exec(a.socketPath, 'touch /app/evil');
    expect(code.exitCode).not.toBe(0);
    expect(code.stderr).toMatch(/Read-only file system/);
    const write = await exec(a.socketPath, 'touch /usr/bin/evil; echo > /etc/passwd');
    expect(write.exitCode).not.toBe(0);
    expect(write.stderr).toMatch(/Read-only file system/);
    const who = await exec(a.socketPath, 'id -u; grep -E "^(CapEff|CapBnd|NoNewPrivs)" /proc/self/status; mount -t tmpfs none /tmp 2>&1; echo mount=$?');
    expect(who.stdout).toMatch(/^1000\n/);
    expect(who.stdout).toMatch(/CapEff:\s+0000000000000000/);
    expect(who.stdout).toMatch(/CapBnd:\s+0000000000000000/);
    expect(who.stdout).toMatch(/NoNewPrivs:\s+1/);
    expect(who.stdout).toMatch(/mount=[1-9]/);
  });
});

describe('processes', () => {
  test('host processes are invisible: only the sandbox pid namespace shows', async () => {
    const seen = await exec(a.socketPath, 'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline; echo; done');
    expect(seen.stdout).not.toMatch(/jest/);
    expect(seen.stdout).not.toMatch(/postgres|clickhouse|temporal/);
    // Init, the agent, the shell and the loop's commands; nothing from the host.
    const pids = (await exec(a.socketPath, 'ls -d /proc/[0-9]* | wc -l')).stdout.trim();
    expect(Number(pids)).toBeLessThan(10);
    const kill = await exec(a.socketPath, `kill -0 ${process.pid} 2>&1; echo rc=$?`);
    expect(kill.stdout).toMatch(/rc=1/);
  });

  test("another sandbox's files and processes are out of reach", async () => {
    await exec(a.socketPath, 'echo mine > /workspace/a-only.txt');
    const marker = 'sleep 1001';
    const sleeper = await callSandbox(a.socketPath, 'POST', '/process', { command: `exec ${marker}`, name: 'marker' });
    expect(sleeper.status).toBe(200);
    const aHostFolder = runtime.layout(a.id).root;
    const fromB = await exec(b.socketPath, `cat /workspace/a-only.txt; ls '${aHostFolder}'; for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline; echo; done`);
    expect(fromB.stderr).toMatch(/a-only.txt: No such file or directory/);
    expect(fromB.stderr).toMatch(/No such file or directory/);
    expect(fromB.stdout).not.toContain(marker);
    await callSandbox(a.socketPath, 'DELETE', '/process/marker/kill');
  });
});

test("the API socket cannot be swapped for a link to a host socket", async () => {
  const attempt = await exec(a.socketPath, 'rm -f /run/hangar-api/agent.sock; ln -sf /var/run/host.sock /run/hangar-api/evil.sock; mv /run/hangar-api /run/moved; echo done');
  expect(attempt.stderr).toMatch(/Permission denied/);
  expect(attempt.stderr).toMatch(/Device or resource busy|Permission denied/);
  const socket = fs.lstatSync(runtime.socketPath(a.id));
  expect(socket.isSocket()).toBe(true);
  expect(fs.statSync(path.dirname(runtime.socketPath(a.id)))).toMatchObject({ uid: 0, mode: 0o40755 });
  expect((await callSandbox(a.socketPath, 'GET', '/health')).status).toBe(200);
});

describe('network', () => {
  let server: net.Server;
  let port: number;

  beforeAll(async () => {
    server = net.createServer((socket) => socket.end('hello from the host\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('the host network is unreachable: loopback is the sandbox own, nothing else exists', async () => {
    const probe = (host: string) =>
      `python3 -c "import socket
try:
    socket.create_connection(('${host}', ${port}), timeout=2); print('connected')
except OSError as e:
    print(type(e).__name__, e)"`;
    expect((await exec(a.socketPath, probe('127.0.0.1'))).stdout).toMatch(/ConnectionRefusedError/);
    expect((await exec(a.socketPath, probe('10.0.2.2'))).stdout).toMatch(/unreachable/i);
    const interfaces = await exec(a.socketPath, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
    expect(interfaces.stdout.trim()).toBe('lo');
  });

  test("a port opened in one sandbox is not reachable from another", async () => {
    const listening = await callSandbox(a.socketPath, 'POST', '/process', {
      command: 'python3 -m http.server 8765 --bind 127.0.0.1',
      name: 'web',
      waitForPorts: [8765],
      timeout: 30,
    });
    expect(listening.json.status).toBe('running');
    const fromA = await exec(a.socketPath, 'python3 -c "import urllib.request; print(urllib.request.urlopen(\'http://127.0.0.1:8765/\').status)"');
    expect(fromA.stdout.trim()).toBe('200');
    const fromB = await exec(b.socketPath, 'python3 -c "import urllib.request; urllib.request.urlopen(\'http://127.0.0.1:8765/\')" 2>&1');
    expect(fromB.stdout).toMatch(/Connection refused/);
    await callSandbox(a.socketPath, 'DELETE', '/process/web/kill');
  });
});

describe('filesystem API escapes', () => {
  beforeAll(async () => {
    await exec(
      a.socketPath,
      [
        'ln -sfn /proc/1/root /workspace/to-init-root',
        'ln -sfn /run/hangar /workspace/to-agent',
        'ln -sfn /etc /workspace/to-etc',
        'ln -sfn /etc/created-by-escape /workspace/dangling',
        'ln -sfn / /workspace/to-root',
      ].join('; '),
    );
  });

  test.each([
    ['/filesystem/..', 400],
    ['/filesystem/workspace/../../etc/passwd', 400],
    ['/filesystem/%2e%2e/%2e%2e/etc/passwd', 400],
    ['/filesystem/workspace%2F..%2F..%2Fetc', 400],
    ['/filesystem/%E0%A4%A', 400],
    ['/filesystem/proc/1/environ', 403],
    ['/filesystem//proc/self/environ', 403],
    ['/filesystem/run/hangar/agent.sock', 403],
    ['/filesystem/workspace/to-init-root/etc/passwd', 403],
    ['/filesystem/workspace/to-agent/port-events.jsonl', 403],
    ['/filesystem/workspace/to-root/proc/1/environ', 403],
    [`/filesystem${hostSecret}`, 404],
    ['/filesystem/tree/workspace/to-agent', 403],
  ])('GET %s -> %d', async (url, status) => {
    const reply = await callSandbox(a.socketPath, 'GET', url);
    expect(reply.status).toBe(status);
    expect(typeof reply.json.error).toBe('string');
  });

  test.each([
    ['/filesystem/etc/evil', 403],
    ['/filesystem/usr/bin/evil', 403],
    ['/filesystem/workspace/to-etc/evil', 403],
    ['/filesystem/workspace/dangling', 403],
    ['/filesystem/workspace/to-root/etc/evil', 403],
    ['/filesystem/workspace/../etc/evil', 400],
  ])('PUT %s -> %d', async (url, status) => {
    const reply = await callSandbox(a.socketPath, 'PUT', url, { content: 'escaped' });
    expect(reply.status).toBe(status);
    const check = await exec(a.socketPath, 'ls /etc/evil /etc/created-by-escape /usr/bin/evil 2>&1 | grep -c "No such file"');
    expect(check.stdout.trim()).toBe('3');
  });

  test('deleting through a symlink removes the link, never its target', async () => {
    const reply = await callSandbox(a.socketPath, 'DELETE', '/filesystem/workspace/to-etc?recursive=true');
    expect(reply.status).toBe(200);
    expect((await exec(a.socketPath, 'test -f /etc/passwd && test ! -e /workspace/to-etc && echo intact')).stdout.trim()).toBe('intact');
    expect((await callSandbox(a.socketPath, 'DELETE', '/filesystem/workspace?recursive=true')).status).toBe(403);
  });
});
