import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomically } from '../atomic-file';
import { SANDBOX_SYSCALL_POLICY, type SyscallPolicy } from './syscall-policy';

/**
 * The policy as a BPF program, compiled by libseccomp (Debian's python3-seccomp bindings) rather
 * than written by hand: libseccomp knows each architecture's call numbers, checks the
 * architecture of every call, and lays out the comparisons. The program reads the policy as
 * JSON on stdin and writes the filter to stdout, in the form bwrap's --seccomp loads.
 */
const COMPILER = `
import json, os, sys, seccomp
policy = json.load(sys.stdin)
f = seccomp.SyscallFilter(seccomp.ERRNO(policy["defaultErrno"]))
f.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.ERRNO(policy["foreignArchErrno"]))
for name in policy["allow"]:
    f.add_rule(seccomp.ALLOW, name)
for rule in policy["rules"]:
    action = seccomp.ALLOW if rule["action"] == "allow" else seccomp.ERRNO(rule["action"]["errno"])
    args = []
    for a in rule["args"]:
        if a["op"] == "eq":
            args.append(seccomp.Arg(a["index"], seccomp.EQ, a["value"]))
        else:
            args.append(seccomp.Arg(a["index"], seccomp.MASKED_EQ, a["mask"], a["value"]))
    f.add_rule(action, rule["syscall"], *args)
out = os.fdopen(sys.stdout.fileno(), "wb", closefd=False)
f.export_bpf(out)
out.flush()
`;

/** Interpreters tried in turn: Debian's, where python3-seccomp installs, then the PATH's. */
const PYTHONS = ['/usr/bin/python3', 'python3'];

export class SeccompUnavailableError extends Error {}

/** Compiles a policy into the BPF program bwrap loads. */
export async function compileSeccompFilter(policy: SyscallPolicy): Promise<Buffer> {
  const failures: string[] = [];
  for (const python of PYTHONS) {
    try {
      return await runCompiler(python, JSON.stringify(policy));
    } catch (err) {
      failures.push(`${python}: ${(err as Error).message.trim().split('\n').pop()}`);
    }
  }
  throw new SeccompUnavailableError(
    `could not compile the sandbox seccomp filter with libseccomp (install Debian's python3-seccomp): ${failures.join('; ')}`,
  );
}

function runCompiler(python: string, policyJson: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = execFile(python, ['-c', COMPILER], { encoding: 'buffer', maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(stderr.toString() || err.message));
      else if (stdout.length === 0 || stdout.length % 8 !== 0) reject(new Error(`libseccomp wrote ${stdout.length} bytes, not a BPF program`));
      else resolve(stdout);
    });
    child.stdin?.end(policyJson);
  });
}

/**
 * The sandbox filter of one node, compiled once per policy and kept under the data folder by
 * the policy's digest: a node worker that restarts reuses it, and a new policy gets a new file
 * while sandboxes started on the old one keep theirs (a loaded filter is the kernel's copy).
 */
export class SandboxSeccompFilter {
  private compiled?: Promise<string>;

  constructor(
    private readonly dataDir: string,
    private readonly policy: SyscallPolicy = SANDBOX_SYSCALL_POLICY,
  ) {}

  /** The filter's file, compiled on first need. */
  file(): Promise<string> {
    this.compiled ??= this.compile().catch((err) => {
      this.compiled = undefined;
      throw err;
    });
    return this.compiled;
  }

  /** A descriptor on the filter for one bwrap start; the caller closes it once bwrap has it. */
  async open(): Promise<number> {
    return fs.openSync(await this.file(), 'r');
  }

  private async compile(): Promise<string> {
    const digest = createHash('sha256').update(JSON.stringify(this.policy)).digest('hex').slice(0, 16);
    const file = path.join(this.dataDir, 'seccomp', `sandbox-${digest}.bpf`);
    if (fs.existsSync(file)) return file;
    const program = await compileSeccompFilter(this.policy);
    await fsp.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    await writeFileAtomically(file, program, 0o600);
    return file;
  }
}
