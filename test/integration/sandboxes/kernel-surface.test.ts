import fc from 'fast-check';
import type { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import type { SandboxHandle } from '../../../runtime/sandbox-runtime';
import { CLONE_NAMESPACE_FLAGS, ENOSYS, EPERM } from '../../../runtime/seccomp/syscall-policy';
import { callSandbox, exec, runtimeDataDir, sandboxSpec, testRuntime } from '../../helpers/sandbox-runtime';
import fs from 'node:fs';

// Real sandboxes on a busy 2-core machine: generous limits; no test asserts on time.
jest.setTimeout(60_000);

// The kernel surface a sandbox's code can reach (issue 17): every call below is made from
// inside a real sandbox by its unprivileged user, as an attacker's code would make it.
const dataDir = runtimeDataDir('kernel');
let runtime: BwrapRuntime;
let sandbox: SandboxHandle;

beforeAll(async () => {
  runtime = testRuntime(dataDir);
  sandbox = await runtime.start(sandboxSpec());
});

afterAll(async () => {
  for (const s of await runtime.list()) await runtime.remove(s.id);
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/**
 * Makes raw system calls (x86_64 numbers) with ctypes and prints {name: errno, 0 when it
 * succeeded} as JSON. Arguments are harmless: where the filter lets a call through, it fails
 * on its arguments (EFAULT, EBADF, EINVAL) or succeeds in this throwaway process, never EPERM
 * from the filter, so EPERM here is the filter's answer.
 */
const PROBE = `
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(number, *args):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
    return 0 if result >= 0 else ctypes.get_errno()
calls = json.loads(sys.argv[1])
out = {}
for name, (number, args) in calls.items():
    if number == 56:
        # clone: a child that gets through exits at once.
        ctypes.set_errno(0)
        pid = libc.syscall(ctypes.c_long(56), ctypes.c_long(args[0] | 17), ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0))
        if pid == 0:
            os._exit(0)
        if pid > 0:
            os.waitpid(pid, 0)
        out[name] = 0 if pid >= 0 else ctypes.get_errno()
    else:
        out[name] = call(number, *args)
print(json.dumps(out))
`;

async function probe(calls: Record<string, [number, number[]]>): Promise<Record<string, number>> {
  const write = await callSandbox(sandbox.socketPath, 'PUT', '/filesystem/tmp/probe.py', { content: PROBE });
  expect(write.status).toBe(200);
  const result = await exec(sandbox.socketPath, `python3 /tmp/probe.py '${JSON.stringify(calls)}'`);
  expect(result.stderr).toBe('');
  return JSON.parse(result.stdout);
}

const CLONE_NEWNS = 0x00020000;
const CLONE_NEWUSER = 0x10000000;

test('every process runs under the filter, with no_new_privs', async () => {
  const status = (await exec(sandbox.socketPath, 'grep -E "^(Seccomp|NoNewPrivs):" /proc/self/status')).stdout;
  expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
  expect(status).toMatch(/^Seccomp:\s+2$/m);
  // The agent itself (the parent of every command) too.
  const agent = (await exec(sandbox.socketPath, 'grep -E "^Seccomp:" /proc/$PPID/status')).stdout;
  expect(agent).toMatch(/^Seccomp:\s+2$/m);
  // bwrap read the filter from a descriptor of its own; none is left open inside.
  const descriptors = await exec(sandbox.socketPath, 'ls -l /proc/$PPID/fd /proc/self/fd');
  expect(descriptors.exitCode).toBe(0);
  expect(descriptors.stdout).not.toMatch(/seccomp|\.bpf/);
});

test("no nested user namespace: the issue's mount as root of a new namespace is refused", async () => {
  const result = await exec(sandbox.socketPath, "unshare -Urm sh -c 'mount -t tmpfs x /tmp' && echo mounted");
  expect(result.stdout).not.toMatch(/mounted/);
  expect(result.exitCode).not.toBe(0);
  expect(result.stderr).toMatch(/Operation not permitted/);
});

test('the calls container escapes start from answer EPERM, and the sandbox goes on', async () => {
  const blocked: Record<string, [number, number[]]> = {
    unshare_user: [272, [CLONE_NEWUSER]],
    unshare_mount: [272, [CLONE_NEWNS]],
    setns: [308, [-1, 0]],
    mount: [165, [0, 0, 0, 0, 0]],
    umount2: [166, [0, 0]],
    pivot_root: [155, [0, 0]],
    chroot: [161, [0]],
    keyctl: [250, [0, -3, 0]],
    add_key: [248, [0, 0, 0, 0, 0]],
    request_key: [249, [0, 0, 0, 0]],
    bpf: [321, [0, 0, 0]],
    perf_event_open: [298, [0, 0, -1, -1, 0]],
    io_uring_setup: [425, [1, 0]],
    io_uring_enter: [426, [-1, 0, 0, 0, 0]],
    io_uring_register: [427, [-1, 0, 0, 0]],
    userfaultfd: [323, [0]],
    init_module: [175, [0, 0, 0]],
    finit_module: [313, [-1, 0, 0]],
    delete_module: [176, [0, 0]],
    kexec_load: [246, [0, 0, 0, 0]],
    kexec_file_load: [320, [-1, -1, 0, 0, 0]],
    reboot: [169, [0, 0, 0, 0]],
    swapon: [167, [0, 0]],
    open_by_handle_at: [304, [-1, 0, 0]],
    syslog: [103, [3, 0, 0]],
    acct: [163, [0]],
    settimeofday: [164, [0, 0]],
    clock_settime: [227, [0, 0]],
    iopl: [172, [3]],
    ioperm: [173, [0, 1, 1]],
    fsopen: [430, [0, 0]],
    open_tree: [428, [-1, 0, 0]],
    move_mount: [429, [-1, 0, -1, 0, 0]],
    personality_read_implies_exec: [135, [0x0400000]],
    clone_new_user: [56, [CLONE_NEWUSER]],
  };
  const answers = await probe({ ...blocked, clone3: [435, [0, 0]], getpid: [39, []], fork_by_clone: [56, [0]] });
  for (const name of Object.keys(blocked)) expect([name, answers[name]]).toEqual([name, EPERM]);
  // clone3 hides its flags from the filter: ENOSYS sends the C library back to clone.
  expect(answers.clone3).toBe(ENOSYS);
  // What programs need still works.
  expect(answers.getpid).toBe(0);
  expect(answers.fork_by_clone).toBe(0);
  expect((await exec(sandbox.socketPath, 'echo still here')).stdout).toBe('still here\n');
  expect((await callSandbox(sandbox.socketPath, 'GET', '/health')).status).toBe(200);
});

test('clone and unshare with any set of namespace flags are refused; clone without them works', async () => {
  const namespaceFlags = [0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000];
  expect(namespaceFlags.reduce((a, b) => a | b)).toBe(CLONE_NAMESPACE_FLAGS);
  const sets = fc.sample(fc.subarray(namespaceFlags, { minLength: 1 }), { numRuns: 40 });
  const calls: Record<string, [number, number[]]> = {};
  sets.forEach((set, i) => {
    const flags = set.reduce((a, b) => a | b, 0);
    calls[`unshare_${i}`] = [272, [flags]];
    calls[`clone_${i}`] = [56, [flags]];
  });
  const answers = await probe(calls);
  for (const [name, errno] of Object.entries(answers)) expect([name, errno]).toEqual([name, EPERM]);
  // Threads and processes: what every runtime starts with.
  const threads = await exec(sandbox.socketPath, `python3 -c "import os, threading
t = threading.Thread(target=lambda: None); t.start(); t.join()
pid = os.fork()
os._exit(0) if pid == 0 else print(os.waitpid(pid, 0)[1])"`);
  expect(threads.stdout).toBe('0\n');
});

describe('the usual tricks against the host fail', () => {
  test('no kernel views of the host: no /sys, no cgroup files, pid 1 is the sandbox init', async () => {
    expect((await exec(sandbox.socketPath, 'ls /sys')).exitCode).not.toBe(0);
    expect((await exec(sandbox.socketPath, 'cat /proc/1/cgroup; ls /sys/fs/cgroup')).stderr).toMatch(/No such file or directory/);
    const root = await exec(sandbox.socketPath, 'ls /proc/1/root/');
    expect(root.exitCode).not.toBe(0);
    expect(root.stderr).toMatch(/Permission denied/);
  });

  test('no devices beyond the harmless ones, and none can be made', async () => {
    const devices = (await exec(sandbox.socketPath, 'ls /dev')).stdout.split('\n').filter(Boolean).sort();
    for (const device of devices) expect(['console', 'core', 'fd', 'full', 'mqueue', 'null', 'ptmx', 'pts', 'random', 'shm', 'stderr', 'stdin', 'stdout', 'tty', 'urandom', 'zero']).toContain(device);
    const mknod = await exec(sandbox.socketPath, 'mknod /tmp/disk b 8 0');
    expect(mknod.exitCode).not.toBe(0);
    expect(mknod.stderr).toMatch(/Operation not permitted/);
  });

  test('no hard link to a file of the image, and limits cannot be raised', async () => {
    const link = await exec(sandbox.socketPath, 'ln /usr/bin/env /home/user/env');
    expect(link.exitCode).not.toBe(0);
    expect(link.stderr).toMatch(/Invalid cross-device link|Operation not permitted/);
    const raise = await exec(
      sandbox.socketPath,
      `python3 -c "import resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard + 1, hard + 1)); print('raised')
except (ValueError, OSError) as e:
    print('refused', e)"`,
    );
    expect(raise.stdout).toMatch(/^refused/);
  });
});
