/**
 * The system calls a sandbox may make: an allow list, as the default profiles of Docker and
 * Podman are, so a system call the kernel gains later is refused until someone adds it here.
 * Everything not listed answers EPERM (never a kill: a refused call is an error the program can
 * report, not a crash). The list is x86_64's; a call through another architecture's entry
 * (int 0x80, x32) answers ENOSYS.
 *
 * What the list leaves out, and why, is what most container escapes of recent years started
 * from: new namespaces (unshare, setns, clone with a namespace flag: a nested user namespace
 * makes its creator root over new mounts), mount and the new mount API, keyctl and keys, bpf,
 * perf_event_open, io_uring (its requests bypass this filter), userfaultfd (turns kernel races
 * into reliable exploits), kernel modules, kexec, reboot, swap, clock and time setting, chroot,
 * open_by_handle_at (the "shocker" escape), syslog, acct, quotactl, ioperm/iopl and personality
 * changes other than the harmless ones. ptrace, process_vm_* and kcmp stay, as in Docker's
 * profile: the PID namespace and the single unprivileged user confine them to the sandbox.
 */

export const EPERM = 1;
export const ENOSYS = 38;

/** One argument comparison of a conditional rule (libseccomp's SCMP_CMP_*). */
export interface SyscallArgument {
  index: number;
  op: 'eq' | 'masked_eq';
  value: number;
  /** For masked_eq: (argument & mask) == value. */
  mask?: number;
}

export interface ConditionalRule {
  syscall: string;
  /** Allow when every comparison holds; otherwise the policy's default. */
  action: 'allow' | { errno: number };
  args: SyscallArgument[];
}

export interface SyscallPolicy {
  /** errno of every call not allowed. */
  defaultErrno: number;
  /** errno of a call made through another architecture's entry point. */
  foreignArchErrno: number;
  allow: readonly string[];
  rules: readonly ConditionalRule[];
}

/** Every namespace flag of clone(2): CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET. */
export const CLONE_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000;

/** Execution domains a program may ask for: Linux itself, with or without address randomisation. */
const PERSONALITIES = [0x0, 0x8, 0x20000, 0x20008, 0xffffffff];

const ALLOWED = [
  // files and descriptors
  'access', 'chdir', 'chmod', 'chown', 'close', 'close_range', 'copy_file_range', 'creat', 'dup', 'dup2', 'dup3',
  'faccessat', 'faccessat2', 'fadvise64', 'fallocate', 'fchdir', 'fchmod', 'fchmodat', 'fchown', 'fchownat', 'fcntl',
  'fdatasync', 'fgetxattr', 'flistxattr', 'flock', 'fremovexattr', 'fsetxattr', 'fstat', 'fstatfs', 'fsync', 'ftruncate',
  'futimesat', 'getcwd', 'getdents', 'getdents64', 'getxattr', 'lchown', 'lgetxattr', 'link', 'linkat', 'listxattr',
  'llistxattr', 'lremovexattr', 'lseek', 'lsetxattr', 'lstat', 'mkdir', 'mkdirat', 'mknod', 'mknodat', 'name_to_handle_at',
  'newfstatat', 'open', 'openat', 'openat2', 'pread64', 'preadv', 'preadv2', 'pwrite64', 'pwritev', 'pwritev2', 'read',
  'readahead', 'readlink', 'readlinkat', 'readv', 'removexattr', 'rename', 'renameat', 'renameat2', 'rmdir', 'sendfile',
  'setxattr', 'splice', 'stat', 'statfs', 'statx', 'symlink', 'symlinkat', 'sync', 'sync_file_range', 'syncfs', 'tee',
  'truncate', 'umask', 'unlink', 'unlinkat', 'utime', 'utimensat', 'utimes', 'vmsplice', 'write', 'writev',
  'inotify_add_watch', 'inotify_init', 'inotify_init1', 'inotify_rm_watch', 'fanotify_mark', 'memfd_create',
  // waiting and events
  'epoll_create', 'epoll_create1', 'epoll_ctl', 'epoll_pwait', 'epoll_pwait2', 'epoll_wait', 'eventfd', 'eventfd2',
  'pause', 'poll', 'ppoll', 'pselect6', 'select', 'signalfd', 'signalfd4', 'timerfd_create', 'timerfd_gettime',
  'timerfd_settime', 'io_cancel', 'io_destroy', 'io_getevents', 'io_pgetevents', 'io_setup', 'io_submit',
  // memory
  'brk', 'madvise', 'membarrier', 'mincore', 'mlock', 'mlock2', 'mlockall', 'mmap', 'mprotect', 'mremap', 'msync',
  'munlock', 'munlockall', 'munmap', 'pkey_alloc', 'pkey_free', 'pkey_mprotect', 'remap_file_pages', 'map_shadow_stack',
  // processes, threads and signals
  'arch_prctl', 'capget', 'capset', 'execve', 'execveat', 'exit', 'exit_group', 'fork', 'vfork', 'futex', 'futex_waitv',
  'get_robust_list', 'set_robust_list', 'get_thread_area', 'set_thread_area', 'getcpu', 'getpgid', 'getpgrp', 'getpid',
  'getppid', 'getpriority', 'getrlimit', 'getrusage', 'getsid', 'gettid', 'ioprio_get', 'ioprio_set', 'kill', 'pidfd_open',
  'pidfd_send_signal', 'prctl', 'prlimit64', 'restart_syscall', 'rseq', 'rt_sigaction', 'rt_sigpending', 'rt_sigprocmask',
  'rt_sigqueueinfo', 'rt_sigreturn', 'rt_sigsuspend', 'rt_sigtimedwait', 'rt_tgsigqueueinfo', 'sched_get_priority_max',
  'sched_get_priority_min', 'sched_getaffinity', 'sched_getattr', 'sched_getparam', 'sched_getscheduler',
  'sched_rr_get_interval', 'sched_setaffinity', 'sched_setattr', 'sched_setparam', 'sched_setscheduler', 'sched_yield',
  'set_tid_address', 'setpgid', 'setpriority', 'setrlimit', 'setsid', 'sigaltstack', 'tgkill', 'tkill', 'wait4', 'waitid',
  'seccomp', 'landlock_add_rule', 'landlock_create_ruleset', 'landlock_restrict_self', 'process_mrelease',
  'ptrace', 'process_vm_readv', 'process_vm_writev', 'kcmp',
  // identity (setpriv becomes the sandbox user with these; without capabilities they only lower)
  'getegid', 'geteuid', 'getgid', 'getgroups', 'getresgid', 'getresuid', 'getuid', 'setfsgid', 'setfsuid', 'setgid',
  'setgroups', 'setregid', 'setresgid', 'setresuid', 'setreuid', 'setuid',
  // sockets
  'accept', 'accept4', 'bind', 'connect', 'getpeername', 'getsockname', 'getsockopt', 'listen', 'recvfrom', 'recvmmsg',
  'recvmsg', 'sendmmsg', 'sendmsg', 'sendto', 'setsockopt', 'shutdown', 'socket', 'socketpair',
  // System V and POSIX IPC (their namespace is the sandbox's own)
  'mq_getsetattr', 'mq_notify', 'mq_open', 'mq_timedreceive', 'mq_timedsend', 'mq_unlink', 'msgctl', 'msgget', 'msgrcv',
  'msgsnd', 'semctl', 'semget', 'semop', 'semtimedop', 'shmat', 'shmctl', 'shmdt', 'shmget',
  // time and the system, read only
  'alarm', 'clock_getres', 'clock_gettime', 'clock_nanosleep', 'getitimer', 'gettimeofday', 'nanosleep', 'setitimer',
  'time', 'timer_create', 'timer_delete', 'timer_getoverrun', 'timer_gettime', 'timer_settime', 'times', 'sysinfo',
  'uname', 'getrandom', 'ioctl', 'pipe', 'pipe2',
];

export const SANDBOX_SYSCALL_POLICY: SyscallPolicy = {
  defaultErrno: EPERM,
  foreignArchErrno: ENOSYS,
  allow: ALLOWED,
  rules: [
    // fork and threads, never a new namespace.
    { syscall: 'clone', action: 'allow', args: [{ index: 0, op: 'masked_eq', mask: CLONE_NAMESPACE_FLAGS, value: 0 }] },
    // clone3 passes its flags in memory, where a filter cannot look: ENOSYS makes the C library
    // fall back to clone, whose flags it can.
    { syscall: 'clone3', action: { errno: ENOSYS }, args: [] },
    ...PERSONALITIES.map((value): ConditionalRule => ({ syscall: 'personality', action: 'allow', args: [{ index: 0, op: 'eq', value }] })),
  ],
};
