import { spawn } from 'node:child_process';
import fsp from 'node:fs/promises';
import path from 'node:path';
import readline from 'node:readline';

/** A step of a build as buildah prints it (`STEP 3/6: COPY a /b`), and whether its cache answered it. */
export interface BuildStep {
  step: number;
  steps: number;
  instruction: string;
  cached: boolean;
}

export interface BuildahOptions {
  buildahPath: string;
  unsharePath: string;
  /** buildah's storage (`--root`, `--runroot`): its layers are the step cache shared by every build of the node. */
  root: string;
  runroot: string;
  storageDriver: string;
  /** Signature policy for the images a build reads (the image store's). */
  policyFile: string;
  /** A private folder for buildah's temporary files. */
  workDir: string;
  /**
   * Where buildah runs: bases are named relative to it (`oci:layouts/<hex>:image`), since buildah
   * names a base after its path, which must then be a valid image name (no dot-folders, no capitals).
   */
  cwd: string;
}

const STEP = /^STEP (\d+)\/(\d+): (.*)$/;
const PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * Runs buildah in namespaces of its own (unshare): a network namespace with nothing but a loopback
 * that is down, so RUN steps reach nothing (bases come from the node's store, never a registry),
 * and its own PID, IPC, UTS and mount namespaces. RUN steps run with `--isolation chroot` in the
 * image's root with Docker's default capabilities. Answers buildah's output's last lines on failure.
 */
function runBuildah(options: BuildahOptions, args: string[], onLine: (line: string) => void): Promise<void> {
  const storage = ['--root', options.root, '--runroot', options.runroot, '--storage-driver', options.storageDriver];
  const unshare = ['--net', '--ipc', '--uts', '--pid', '--fork', '--mount', '--propagation', 'private', '--', options.buildahPath, ...storage, ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(options.unsharePath, unshare, {
      cwd: options.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH, HOME: options.workDir, TMPDIR: options.workDir, BUILDAH_ISOLATION: 'chroot' },
    });
    let tail: string[] = [];
    const keep = (line: string) => {
      tail = [...tail, line].slice(-12);
    };
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      keep(line);
      onLine(line);
    });
    readline.createInterface({ input: child.stderr }).on('line', keep);
    child.on('error', (err: NodeJS.ErrnoException) => reject(err.code === 'ENOENT' ? new Error(`${options.unsharePath} or buildah is not installed (run scripts/install-deps.sh)`) : err));
    child.on('close', (code) => {
      if (code === 0) resolve();
      else reject(new BuildahError(tail.filter((line) => line.trim() !== '').slice(-6).join('\n') || `buildah exited with ${code}`));
    });
  });
}

/** A build buildah refused or a step that failed; the message is buildah's own last lines. */
export class BuildahError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BuildahError';
  }
}

/**
 * Builds `dockerfile` over `contextDir` into buildah's storage as `tag`, every step cached by its
 * content (`--layers`): a step whose instruction, files and base are unchanged is taken from the
 * cache, and so is every step before the first changed one. Reports each step once it is done;
 * answers the image's id (its config's digest).
 */
export async function buildahBuild(options: BuildahOptions, build: { dockerfile: string; contextDir: string; tag: string; onStep: (step: BuildStep) => void }): Promise<string> {
  let current: BuildStep | undefined;
  const finish = () => {
    if (current) build.onStep(current);
    current = undefined;
  };
  const iidFile = path.join(options.workDir, `iid-${process.hrtime.bigint()}`);
  const args = ['build', '--signature-policy', options.policyFile, '--isolation', 'chroot', '--layers', '--iidfile', iidFile, '-f', build.dockerfile, '-t', build.tag, build.contextDir];
  await runBuildah(options, args, (line) => {
    const step = STEP.exec(line);
    if (step) {
      finish();
      current = { step: Number(step[1]), steps: Number(step[2]), instruction: step[3], cached: false };
    } else if (current && line.startsWith('--> Using cache')) {
      current.cached = true;
    } else if (line.startsWith('COMMIT')) {
      finish();
    }
  });
  finish();
  const id = (await fsp.readFile(iidFile, 'utf8')).trim();
  await fsp.rm(iidFile, { force: true });
  return id.startsWith('sha256:') ? id : `sha256:${id}`;
}

/** Writes the built image `tag` into an OCI layout (`oci:<dir>:<layoutTag>`), layers uncompressed: they are unpacked next, on this node. */
export async function buildahPush(options: BuildahOptions, push: { tag: string; layoutDir: string; layoutTag: string }): Promise<void> {
  await runBuildah(options, ['push', '--signature-policy', options.policyFile, '--quiet', '--disable-compression', push.tag, `oci:${push.layoutDir}:${push.layoutTag}`], () => undefined);
}
