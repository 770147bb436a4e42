import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SandboxSeccompFilter, SeccompUnavailableError, compileSeccompFilter } from '../../../../runtime/seccomp/seccomp-filter';
import { SANDBOX_SYSCALL_POLICY } from '../../../../runtime/seccomp/syscall-policy';

// What container escapes start from (runtime/seccomp/syscall-policy.ts): none may be allowed
// outright; clone and personality only under their argument rules.
const NEVER_ALLOWED = [
  'unshare', 'setns', 'mount', 'umount2', 'pivot_root', 'chroot', 'keyctl', 'add_key', 'request_key', 'bpf', 'perf_event_open',
  'io_uring_setup', 'io_uring_enter', 'io_uring_register', 'userfaultfd', 'init_module', 'finit_module', 'delete_module',
  'kexec_load', 'kexec_file_load', 'reboot', 'swapon', 'swapoff', 'open_by_handle_at', 'syslog', 'acct', 'quotactl',
  'settimeofday', 'clock_settime', 'iopl', 'ioperm', 'fsopen', 'fsmount', 'fsconfig', 'fspick', 'open_tree', 'move_mount',
  'mount_setattr', 'clone', 'clone3', 'personality',
];

test('the allow list names none of the calls escapes start from, and names each call once', () => {
  expect(SANDBOX_SYSCALL_POLICY.allow.filter((name) => NEVER_ALLOWED.includes(name))).toEqual([]);
  expect(new Set(SANDBOX_SYSCALL_POLICY.allow).size).toBe(SANDBOX_SYSCALL_POLICY.allow.length);
});

test('libseccomp compiles the policy into a BPF program (8-byte instructions)', async () => {
  const program = await compileSeccompFilter(SANDBOX_SYSCALL_POLICY);
  expect(program.length % 8).toBe(0);
  expect(program.length / 8).toBeGreaterThan(SANDBOX_SYSCALL_POLICY.allow.length / 8);
});

test('a policy naming a call libseccomp does not know fails, naming what to install', async () => {
  const bad = { ...SANDBOX_SYSCALL_POLICY, allow: [...SANDBOX_SYSCALL_POLICY.allow, 'no_such_call'] };
  await expect(compileSeccompFilter(bad)).rejects.toThrow(SeccompUnavailableError);
  await expect(compileSeccompFilter(bad)).rejects.toThrow(/python3-seccomp/);
});

test("a node compiles the filter once, into its data folder, under the policy's digest", async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-seccomp-'));
  try {
    const first = await new SandboxSeccompFilter(dataDir).file();
    expect(path.dirname(first)).toBe(path.join(dataDir, 'seccomp'));
    expect(fs.statSync(first).mode & 0o777).toBe(0o600);
    const written = fs.statSync(first).mtimeMs;
    // A restarted node finds it; another policy gets a file of its own.
    expect(await new SandboxSeccompFilter(dataDir).file()).toBe(first);
    expect(fs.statSync(first).mtimeMs).toBe(written);
    const other = await new SandboxSeccompFilter(dataDir, { ...SANDBOX_SYSCALL_POLICY, allow: SANDBOX_SYSCALL_POLICY.allow.slice(1) }).file();
    expect(other).not.toBe(first);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
