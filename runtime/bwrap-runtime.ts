import { spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { SandboxAgentClient, waitForAgent } from './agent-client';
import { bwrapArguments, rootMountPoints, type LaunchPlan } from './bwrap-args';
import { SandboxSeccompFilter } from './seccomp/seccomp-filter';
import { captureTree, removeTree, replaceTree, seedTree } from './snapshot-files';
import { detectCgroupDriver, type CgroupDriver, type CgroupOptions, type SandboxCgroup } from './cgroups';
import { SANDBOX_ETC_FILE_NAMES } from './etc-files';
import { isSameProcess, processStartTicks } from './host-process';
import { diskUsageBytes } from './disk-usage';
import { findOnPath } from './find-on-path';
import { imageName } from './image';
import { BUILT_BASE_IMAGE } from '../domain/images/builtin';
import type { PullOptions, StoredImage } from './image-store';
import { sandboxOwnedPaths } from './image-tree';
import { SandboxImages, type SandboxImagesOptions, type WorkspaceImageBuild } from './sandbox-images';
import { SANDBOX_AGENT_CONFIG, assertSandboxId, sandboxLayout, snapshotFilesDir, type SandboxLayout } from './layout';
import { SANDBOX_ENV, installCode, prepareSandboxFolders, writeIdentityFiles, type SandboxUser } from './sandbox-files';
import { validateSpec } from './spec-validation';
import { RemovalLog } from './removal-log';
import { OVERLAY_MOUNT_FAILED, prepareUpperLayer, rootOverlayCommand } from './root-overlay';
import { StateStore, type SandboxRecord } from './state-store';
import { WarmPool, isWarmId, setHostname } from './warm-pool';
import { pinSocket } from './pinned-socket';
import type { SandboxAttachment, SandboxNetwork } from './network/sandbox-network';
import {
  SandboxNotFoundError,
  type FreezeState,
  SandboxStartError,
  SandboxSpecError,
  type RuntimeSandboxSpec,
  type SandboxActivity,
  type SandboxHandle,
  type SandboxRemoval,
  type SandboxRuntime,
  type SandboxStatus,
} from './sandbox-runtime';

/** The freeze state of a sandbox never frozen. */
const NEVER_FROZEN: FreezeState = { generation: 0, frozen: false };

export interface BwrapRuntimeOptions {
  /** Sandboxes live in `<dataDir>/sandboxes/<id>/`. */
  dataDir: string;
  /** Folder of the compiled agent (its main.js); default: the build next to this module. */
  agentDir?: string;
  /** node_modules the agent loads its lazy dependencies (the MCP SDK) from. */
  nodeModulesDir?: string;
  /** Node binary that runs the agent; shown read-only inside the sandbox. Default: this process's. */
  nodeBinary?: string;
  /** The host's setpriv, run through the host's loader in sandboxes on pulled images. */
  setprivPath?: string;
  /**
   * Images pulled from registries (runtime/image-store.ts): the tools, and registries reached
   * without TLS checks besides loopback ones; how base-image is built (runtime/base-image.ts).
   */
  images?: Omit<SandboxImagesOptions, 'dataDir' | 'identity' | 'nodeBinary' | 'setprivBinary'>;
  /** Host uid and gid of the sandbox user (named `user` inside). */
  uid?: number;
  gid?: number;
  cgroup?: CgroupOptions | CgroupDriver;
  /** Most processes (and threads) one sandbox may have at once. */
  pidsMax?: number;
  startTimeoutMs?: number;
  bwrapPath?: string;
  /**
   * Sandboxes kept started ahead of need (default 0), on base-image, the default image, once the
   * node has it (prewarm). A new sandbox on it without volumes takes one over instead of
   * starting from nothing: its creation then costs milliseconds, not the tens a Node start
   * takes. Call close() to end them.
   */
  warmPool?: number;
  /**
   * The node's sandbox networking (started by the caller): when set, a sandbox whose spec does
   * not say `internet: false` runs in a namespace of its own with outbound network by its
   * policy. Without it every sandbox has loopback only.
   */
  network?: SandboxNetwork;
}

const WARM_MEMORY_MB = 256;

/** Where bwrap finds the seccomp filter: the descriptor after stdin, stdout and stderr. */
const SECCOMP_FD = 3;

/**
 * The launcher joins the sandbox's cgroups before exec'ing bubblewrap, so every process of the
 * sandbox (bubblewrap, its init, the agent, user code) is limited and freezable from the first
 * instruction.
 */
const LAUNCH_SCRIPT = ['IFS=:', 'for f in $HANGAR_CGROUP_PROCS; do echo $$ > "$f" || exit 97; done', 'unset IFS HANGAR_CGROUP_PROCS', 'exec "$@"'].join('\n');

/** The sandbox runtime of one node: bubblewrap for isolation, cgroups for limits and standby. */
export class BwrapRuntime implements SandboxRuntime {
  private readonly store: StateStore;
  private readonly removals: RemovalLog;
  private readonly images: SandboxImages;
  private readonly cgroups: CgroupDriver;
  private readonly locks = new Map<string, Promise<unknown>>();
  /** Captures under way, by snapshot id: a second ask joins the first, a removal waits for it. */
  private readonly captures = new Map<string, Promise<number>>();
  private readonly uid: number;
  private readonly gid: number;
  private readonly bwrapPath: string;
  /** Found once, where the node gives sandboxes a network (a launch enters its namespace with it). */
  private readonly nsenterPath?: string;
  /** Found on the first start on a stored image (its root overlay is mounted in a namespace of its own). */
  private unshareBinary?: string;
  private readonly pool: WarmPool;
  private readonly seccomp: SandboxSeccompFilter;

  constructor(private readonly options: BwrapRuntimeOptions) {
    this.store = new StateStore(options.dataDir);
    this.removals = new RemovalLog(options.dataDir);
    this.cgroups = options.cgroup && 'create' in options.cgroup ? options.cgroup : detectCgroupDriver(options.cgroup);
    this.uid = options.uid ?? 1000;
    this.gid = options.gid ?? this.uid;
    this.bwrapPath = options.bwrapPath ?? findOnPath('bwrap');
    if (options.network) this.nsenterPath = findOnPath('nsenter');
    this.images = new SandboxImages({
      dataDir: options.dataDir,
      identity: { uid: this.uid, gid: this.gid },
      nodeBinary: options.nodeBinary ?? process.execPath,
      setprivBinary: options.setprivPath ?? '/usr/bin/setpriv',
      ...options.images,
    });
    this.seccomp = new SandboxSeccompFilter(options.dataDir);
    this.pool = new WarmPool(options.warmPool ?? 0, {
      start: (id) => this.exclusive(id, () => this.launch({ id, workspaceId: 'warm', image: BUILT_BASE_IMAGE, memoryMb: WARM_MEMORY_MB, envs: [], volumes: [] })),
      remove: async (id) => {
        await this.remove(id);
      },
    });
  }

  socketPath(id: string): string {
    return sandboxLayout(this.options.dataDir, id).socketPath;
  }

  layout(id: string): SandboxLayout {
    return sandboxLayout(this.options.dataDir, id);
  }

  /**
   * A host socket reaching `port` inside the sandbox: the sandbox's own forwarder for it (opened
   * on the first call, a byte pipe to 127.0.0.1:port in its network namespace), pinned in the
   * sandbox's host-only folder (pinned-socket.ts). Whether anything listens is not checked.
   */
  async portSocket(id: string, port: number): Promise<string> {
    const layout = this.layout(id);
    const forward = await new SandboxAgentClient(layout.socketPath).forwardPort(port, { timeoutMs: 5_000 });
    return pinSocket(path.join(layout.runDir, path.basename(forward.socketPath)), path.join(layout.root, 'ports', `${port}.sock`));
  }

  /**
   * Copies the sandbox's writable layer into the snapshot `snapshotId` and answers its size on
   * disk; a capture asked again answers the first copy. The sandbox goes on running meanwhile
   * (a freeze for the copy would be seen as a standby by whoever looks), so a file it writes
   * during the copy may be caught part-written, as in a backup of a live disk.
   * A capture asked while one of the same snapshot is under way (the node began it on the
   * snapshot's request notice, then its workflow's activity asks) joins it; one whose files are
   * already whole answers their size even if the sandbox has gone since.
   */
  captureFiles(id: string, snapshotId: string): Promise<number> {
    assertSandboxId(id);
    const target = snapshotFilesDir(this.options.dataDir, snapshotId);
    const running = this.captures.get(snapshotId);
    if (running) return running;
    const capture = this.exclusive(id, async () => {
      if (!fs.existsSync(target) && !(await this.store.read(id))) throw new SandboxNotFoundError(id);
      return captureTree(this.layout(id).fsRoot, target);
    });
    this.captures.set(snapshotId, capture);
    const forget = () => {
      if (this.captures.get(snapshotId) === capture) this.captures.delete(snapshotId);
    };
    capture.then(forget, forget);
    return capture;
  }

  /**
   * Puts the sandbox back to a snapshot's files: its processes end, its writable layer becomes a
   * copy of the snapshot's, and it starts afresh from it with the same id, image, envs and
   * network policy. Its freeze generations go on (a frozen sandbox comes back thawed, a new
   * generation), so its lifecycle keeps its books. A restore asked again with the same
   * `restoreId` once done (a retried activity) answers as the first did. A snapshot whose files
   * are gone is a SandboxSpecError, before anything changed.
   */
  restoreFiles(id: string, snapshotId: string, restoreId: string): Promise<FreezeState> {
    assertSandboxId(id);
    return this.exclusive(id, async () => {
      const record = await this.store.read(id);
      if (!record) throw new SandboxNotFoundError(id);
      if (record.restoredBy === restoreId && (await this.isAlive(record))) return record.freeze ?? NEVER_FROZEN;
      const snapshotDir = snapshotFilesDir(this.options.dataDir, snapshotId);
      if (!fs.existsSync(snapshotDir)) throw new SandboxSpecError(`the snapshot's files are not on this node (${snapshotId}): was it deleted?`);
      const before = record.freeze ?? NEVER_FROZEN;
      const freeze = before.frozen ? { ...before, generation: before.generation + 1, frozen: false, thawedAt: Date.now() } : before;
      // Written before the processes go: a worker dying from here on leaves the generation known.
      await this.store.write({ ...record, freeze });
      await this.cgroups.open(record.cgroupDirs).destroy();
      await fsp.rm(this.socketPath(id), { force: true });
      await this.options.network?.detach(id);
      await replaceTree(snapshotDir, this.layout(id).fsRoot);
      await this.launch({ ...record.spec, seedSnapshotId: undefined }, { freeze, restoredBy: restoreId });
      return freeze;
    });
  }

  /** Deletes a snapshot's files from this node, once a capture of them under way has ended (it would leave them behind). */
  async removeSnapshotFiles(snapshotId: string): Promise<void> {
    const target = snapshotFilesDir(this.options.dataDir, snapshotId);
    await this.captures.get(snapshotId)?.catch(() => undefined);
    return removeTree(target);
  }

  /**
   * A sandbox's image storage: its image as the platform stores it plus what the sandbox wrote
   * to its own writable layer (its folders under `fs/`, and the upper layer of its root overlay
   * on a stored image), whatever else the node has installed.
   */
  async imageStorageBytes(id: string, image: string): Promise<number> {
    const layout = this.layout(id);
    const layer = [...layout.writable.map((folder) => folder.hostPath), layout.upperDir].filter((folder) => fs.existsSync(folder));
    const workspaceId = (await this.store.read(id).catch(() => undefined))?.spec.workspaceId;
    return (await this.images.storedBytes(image, workspaceId)) + (await diskUsageBytes(layer));
  }

  /**
   * Pulls an image from its registry into this node's store, where every sandbox on it shares
   * one copy; a sandbox can then start from the reference. Anonymous unless credentials are
   * given. A failure is an ImagePullError naming the image and the registry's reason.
   */
  pullImage(reference: string, options: PullOptions = {}): Promise<StoredImage> {
    return this.images.pull(reference, options);
  }

  /** Builds a workspace's image from a Dockerfile into this node's store (SandboxImages.build). */
  buildImage(build: WorkspaceImageBuild): Promise<StoredImage> {
    return this.images.build(build);
  }

  /** A workspace's image tag as this node stores it, if it does. */
  findWorkspaceImage(workspaceId: string, name: string, tag: string): Promise<StoredImage | undefined> {
    return this.images.findWorkspaceImage(workspaceId, name, tag);
  }

  /** Forgets a workspace's image tag on this node. */
  removeWorkspaceImage(workspaceId: string, name: string, tag: string, owner: string): Promise<void> {
    return this.images.removeWorkspaceImage(workspaceId, name, tag, owner);
  }

  /** base-image, built first when this node has not yet, once however many ask (runtime/base-image.ts). */
  ensureBaseImage(progress?: (step: string) => void): Promise<StoredImage> {
    return this.images.ensureBaseImage(progress);
  }

  /** base-image if this node has built it. */
  findBaseImage(): Promise<StoredImage | undefined> {
    return this.images.baseImage.find();
  }

  /** The image a reference was last pulled as on this node, if it was. */
  findImage(reference: string): Promise<StoredImage | undefined> {
    return this.images.store.find(reference);
  }

  async start(spec: RuntimeSandboxSpec): Promise<SandboxHandle> {
    validateSpec(spec);
    await this.images.check(spec.image, spec.workspaceId);
    return this.exclusive(spec.id, async () => {
      const record = await this.store.read(spec.id);
      if (record && (await this.isAlive(record))) {
        // Idempotent: a retried start finds it running. The memory limit can change live.
        if (record.spec.memoryMb !== spec.memoryMb) {
          await this.cgroups.open(record.cgroupDirs).setLimits(this.limits(spec));
          await this.store.write({ ...record, spec: { ...record.spec, memoryMb: spec.memoryMb } });
        }
        return this.handle(record);
      }
      // Left over from a crash mid-start or a sandbox whose agent died: clear its processes.
      if (record) await this.cgroups.open(record.cgroupDirs).destroy();
      // Started again under the same id (a workload's revision woken from zero): a new life, ended anew.
      await this.removals.forget(spec.id);
      const handle = (!record && (await this.takeOverWarm(spec))) || (await this.launch(spec));
      this.pool.refill();
      return handle;
    });
  }

  /**
   * Starts the warm pool once base-image is on the node (the node worker calls this after its
   * build): warm sandboxes a previous worker left running on this build of it are kept (or ended
   * when surplus or dead), those on another (an older recipe, or `base` before base-image was
   * the default) are ended, and the rest are started in the background. Without base-image on
   * the node the pool stays empty, and only stale warm sandboxes are ended.
   */
  async prewarm(): Promise<void> {
    const image = await this.images.baseImage.find();
    for (const id of (await this.store.ids()).filter(isWarmId)) {
      const record = await this.store.read(id);
      const current = image !== undefined && record?.imageDigest === image.digest;
      if (!(current && (await this.isAlive(record)) && this.pool.adopt(id))) await this.remove(id);
    }
    if (image) this.pool.fill();
  }

  /** Warm sandboxes ready to be taken over, starting, and why the last start or take-over failed. */
  warmPoolStatus(): { ready: number; starting: number; lastError?: string } {
    return this.pool.status();
  }

  /** Ends the warm sandboxes (the others are not this process's to end). */
  close(): Promise<void> {
    return this.pool.close();
  }

  /**
   * Gives a warm sandbox the identity of `spec`: its folder and files are renamed and
   * rewritten (its mounts follow, the code appears at /app), its hostname set, its limits applied, and its agent reloads
   * its configuration. Undefined when no warm sandbox fits; a failed take-over is cleaned up.
   */
  private async takeOverWarm(spec: RuntimeSandboxSpec): Promise<SandboxHandle | undefined> {
    // A fork's files are copied in before its first start; a warm sandbox has started already.
    // Warm sandboxes have a network namespace when the node gives sandboxes network: one with
    // `internet: false` (loopback only) cannot take one over.
    const sameNetwork = this.networked(spec) === Boolean(this.options.network);
    if (spec.volumes.length > 0 || spec.seedSnapshotId || !this.images.isBuiltin(spec.image) || imageName(spec.image) !== BUILT_BASE_IMAGE || !sameNetwork) return undefined;
    const layout = this.layout(spec.id);
    if (await fsp.stat(layout.root).then(() => true, () => false)) return undefined;
    const warmId = this.pool.take();
    if (!warmId) return undefined;
    const record = await this.store.read(warmId);
    try {
      if (!record || !(await this.isAlive(record))) throw new Error('the warm sandbox is gone');
      if (Boolean(record.network) !== this.networked(spec)) throw new Error('the warm sandbox was started with another network');
      // The sandbox gets the image it asked for as the node has it now, never an older build.
      if (record.imageDigest !== (await this.images.baseImage.find())?.digest) throw new Error('the warm sandbox was started on another build of base-image');
      // From here its address is the new sandbox's, with the new sandbox's policy.
      if (record.network) await this.options.network!.handOver(warmId, spec.id, spec.network);
      await fsp.rename(this.layout(warmId).root, layout.root);
      const claimed: SandboxRecord = { ...record, spec, startedAt: new Date().toISOString() };
      await this.store.write(claimed);
      await Promise.all([
        this.cgroups.open(record.cgroupDirs).setLimits(this.limits(spec)),
        writeIdentityFiles(spec, layout, this.identity(), undefined, record.network),
        installCode(spec.code, layout.codeDir),
        this.cgroups.open(record.cgroupDirs).pids().then((pids) => setHostname(pids, spec.id)),
      ]);
      await new SandboxAgentClient(layout.socketPath).reload();
      return this.handle(claimed);
    } catch (err) {
      this.pool.failed(`take-over failed: ${(err as Error).message}`);
      if (record) await this.cgroups.open(record.cgroupDirs).destroy().catch(() => undefined);
      await Promise.all([warmId, spec.id].map((id) => this.options.network?.detach(id).catch(() => undefined)));
      await fsp.rm(this.layout(warmId).root, { recursive: true, force: true });
      return undefined;
    }
  }

  /** `carried`: what a restarted sandbox keeps of its record (its freeze generations). */
  private async launch(spec: RuntimeSandboxSpec, carried: Pick<SandboxRecord, 'freeze' | 'restoredBy'> = {}): Promise<SandboxHandle> {
    const layout = this.layout(spec.id);
    // The namespace is made while the rest of the start goes on; bubblewrap waits for it below.
    const attaching = await this.beginAttach(spec);
    const network = attaching?.attachment;
    let plan: LaunchPlan;
    let cgroup: SandboxCgroup;
    try {
      const image = await this.images.resolve(spec.image, spec.workspaceId, sandboxOwnedPaths(layout.writable, spec.volumes));
      if (spec.seedSnapshotId) await seedTree(snapshotFilesDir(this.options.dataDir, spec.seedSnapshotId), layout.fsRoot);
      await prepareSandboxFolders(spec, layout, this.identity(), image.run, network);
      plan = this.launchPlan(spec, layout, image, network);
      if (image.lowerDir) prepareUpperLayer(layout, image.lowerDir, rootMountPoints(plan));
      cgroup = await this.cgroups.create(spec.id);
    } catch (err) {
      await this.abandonNetwork(spec.id, attaching);
      throw err;
    }
    const record: SandboxRecord = { ...carried, spec, cgroupDirs: cgroup.dirs, phase: 'starting', network, ...(plan.image.digest ? { imageDigest: plan.image.digest } : {}) };
    try {
      await cgroup.setLimits(this.limits(spec));
      await this.store.write(record);
      await attaching?.linked;
      const filter = await this.seccomp.open();
      const log = fs.openSync(layout.agentLog, 'w', 0o600);
      const overlay = plan.image.lowerDir ? rootOverlayCommand(this.unsharePath(), this.options.dataDir, layout, plan.image.lowerDir) : [];
      const launcher = ['-c', LAUNCH_SCRIPT, 'hangar-launch', ...enterNetwork(network, this.nsenterPath), ...overlay, this.bwrapPath, ...bwrapArguments(plan)];
      const child = spawn('/bin/sh', launcher, {
        detached: true,
        stdio: ['ignore', log, log, filter],
        env: { PATH: SANDBOX_ENV.PATH, HANGAR_CGROUP_PROCS: cgroup.procsFiles.join(':') },
      });
      fs.closeSync(log);
      fs.closeSync(filter);
      let exited: string | undefined;
      child.on('error', (err) => (exited = `could not run bubblewrap: ${err.message}`));
      child.on('exit', (code, signal) => (exited = launchFailure(code, signal)));
      // The worker may go away; the sandbox must not go with it.
      child.unref();
      if (child.pid === undefined) throw new Error('bubblewrap did not start');
      record.pid = child.pid;
      record.pidStartTicks = processStartTicks(child.pid);
      await this.store.write(record);

      await waitForAgent(layout.socketPath, Date.now() + (this.options.startTimeoutMs ?? 15_000), () => exited);
      // The socket exists: from now on nothing inside may add, remove or replace entries there.
      await fsp.chown(layout.apiDir, 0, 0);
      await fsp.chmod(layout.apiDir, 0o755);
      record.phase = 'running';
      record.startedAt = new Date().toISOString();
      await this.store.write(record);
      return this.handle(record);
    } catch (err) {
      await cgroup.destroy().catch(() => undefined);
      await this.abandonNetwork(spec.id, attaching);
      await this.store.write({ ...record, phase: 'stopped', pid: undefined, pidStartTicks: undefined });
      const output = await tail(layout.agentLog, 2_000);
      throw new SandboxStartError(`sandbox ${spec.id} did not start: ${(err as Error).message}${output ? `; its output: ${output}` : ''}`);
    }
  }

  /**
   * Starts making the sandbox's network namespace, when it gets one: a warm sandbox is networked
   * like the sandboxes it stands in for, and may reach nothing until one takes it over.
   */
  private async beginAttach(spec: RuntimeSandboxSpec): Promise<Awaited<ReturnType<SandboxNetwork['beginAttach']>> | undefined> {
    const warm = isWarmId(spec.id) && this.options.network !== undefined;
    if (!this.networked(spec) && !warm) return undefined;
    return this.options.network!.beginAttach(spec.id, warm ? { internet: false } : spec.network);
  }

  /** A failed start's network gone: once the namespace being made is done (or failed), so nothing is left half made. */
  private async abandonNetwork(id: string, attaching: { linked: Promise<void> } | undefined): Promise<void> {
    await attaching?.linked.catch(() => undefined);
    await this.options.network?.detach(id).catch(() => undefined);
  }

  private launchPlan(spec: RuntimeSandboxSpec, layout: SandboxLayout, image: LaunchPlan['image'], network: SandboxAttachment | undefined): LaunchPlan {
    return {
      sandboxId: spec.id,
      uid: this.uid,
      gid: this.gid,
      image,
      etcFiles: SANDBOX_ETC_FILE_NAMES.map((name) => ({ name, hostPath: path.join(layout.etcDir, name) })),
      agentConfigHostPath: layout.agentConfig,
      writable: layout.writable,
      runDir: layout.runDir,
      apiDir: layout.apiDir,
      platformDir: layout.platformDir,
      codeDir: layout.codeDir,
      volumes: spec.volumes,
      agent: {
        nodeBinary: this.options.nodeBinary ?? process.execPath,
        agentDir: this.agentDir(),
        nodeModulesDir: this.options.nodeModulesDir ?? defaultNodeModulesDir(),
        nodeFlags: AGENT_NODE_FLAGS,
      },
      agentEnv: { ...SANDBOX_ENV, HOSTNAME: spec.id, HANGAR_AGENT_CONFIG: SANDBOX_AGENT_CONFIG },
      ownNetworkNamespace: network !== undefined,
      seccompFd: SECCOMP_FD,
      ...(image.lowerDir ? { rootOverlay: layout.overlayMountPoint } : {}),
    };
  }

  private unsharePath(): string {
    this.unshareBinary ??= findOnPath('unshare');
    return this.unshareBinary;
  }

  /**
   * New environment variables: kept in the sandbox's record (a later start has them) and written
   * to the agent's configuration in place, which the agent reads for each process it starts.
   */
  updateEnvs(id: string, envs: RuntimeSandboxSpec['envs']): Promise<void> {
    assertSandboxId(id);
    return this.exclusive(id, async () => {
      const record = await this.store.read(id);
      if (!record) throw new SandboxNotFoundError(id);
      const updated: SandboxRecord = { ...record, spec: { ...record.spec, envs } };
      validateSpec(updated.spec);
      await this.store.write(updated);
      await writeIdentityFiles(updated.spec, this.layout(id), this.identity(), await this.images.runSettings(updated.spec.image, updated.spec.workspaceId), record.network);
    });
  }

  /**
   * A new policy for the sandbox's outbound network: kept in its record (a later start has it)
   * and handed to the node's egress services, which read it for each connection and name lookup.
   * Whether it has a network at all is fixed at its start: `internet` cannot change.
   */
  updateNetwork(id: string, network: RuntimeSandboxSpec['network']): Promise<void> {
    assertSandboxId(id);
    return this.exclusive(id, async () => {
      const record = await this.store.read(id);
      if (!record) throw new SandboxNotFoundError(id);
      const updated: SandboxRecord = { ...record, spec: { ...record.spec, network } };
      if (this.networked(updated.spec) !== this.networked(record.spec)) {
        throw new SandboxSpecError('network.internet cannot change on a running sandbox; create a new sandbox instead');
      }
      await this.store.write(updated);
      if (record.network) await this.options.network?.setPolicy(id, network);
    });
  }

  /** Whether the sandbox gets outbound network here: the node has it and the spec does not refuse it. */
  private networked(spec: RuntimeSandboxSpec): boolean {
    return this.options.network !== undefined && spec.network?.internet !== false;
  }

  stop(id: string): Promise<void> {
    assertSandboxId(id);
    return this.exclusive(id, async () => {
      const record = await this.store.read(id);
      // Its namespace goes with its processes (a later start makes a new one), also when a start
      // that had made one died before writing the record.
      if (!record) return this.options.network?.detach(id);
      await this.cgroups.open(record.cgroupDirs).destroy();
      await fsp.rm(this.socketPath(id), { force: true });
      await this.options.network?.detach(id);
      if (record.phase !== 'stopped' || record.network) await this.store.write({ ...record, phase: 'stopped', pid: undefined, pidStartTicks: undefined, network: undefined });
    });
  }

  /**
   * Stops the sandbox, deletes its files, and answers when it stopped and its last freeze state.
   * The answer is kept (runtime/removal-log.ts) before the files go, so a remove asked again
   * answers the same.
   */
  async remove(id: string): Promise<SandboxRemoval> {
    assertSandboxId(id);
    const removal = (await this.removals.read(id)) ?? (await this.stopForRemoval(id));
    await this.exclusive(id, () => fsp.rm(this.layout(id).root, { recursive: true, force: true }));
    return removal;
  }

  private async stopForRemoval(id: string): Promise<SandboxRemoval> {
    const running = (await this.store.read(id))?.phase === 'running';
    await this.stop(id);
    // Read once its processes are gone: nothing can thaw it any more, and a thaw recorded before is in.
    const freeze = running ? ((await this.store.read(id))?.freeze ?? NEVER_FROZEN) : undefined;
    const removal: SandboxRemoval = { stoppedAt: Date.now(), ...(freeze ? { freeze } : {}) };
    // A warm sandbox never served anyone: nothing asks how it ended.
    if (!isWarmId(id)) await this.removals.write(id, removal);
    return removal;
  }

  freeze(id: string): Promise<FreezeState> {
    return this.exclusive(id, async () => {
      const { record, cgroup, state } = await this.settledFreeze(id);
      if (state.frozen) return state;
      await cgroup.freeze();
      return this.recordFreeze(record, { ...state, frozen: true, frozenAt: Date.now() });
    });
  }

  thaw(id: string): Promise<FreezeState> {
    return this.exclusive(id, async () => {
      const { record, cgroup, state } = await this.settledFreeze(id);
      if (!state.frozen) return state;
      await cgroup.thaw();
      return this.recordFreeze(record, { ...state, generation: state.generation + 1, frozen: false, thawedAt: Date.now() });
    });
  }

  freezeState(id: string): Promise<FreezeState> {
    return this.exclusive(id, async () => (await this.settledFreeze(id)).state);
  }

  /**
   * The sandbox's freeze state with the record and the cgroup agreeing. The cgroup is the truth:
   * a worker that died between changing the cgroup and recording it left the record behind, so
   * the change is recorded now (as of now; the moment it really happened is lost with the worker).
   */
  private async settledFreeze(id: string): Promise<{ record: SandboxRecord; cgroup: SandboxCgroup; state: FreezeState }> {
    const cgroup = await this.liveCgroup(id);
    const record = (await this.store.read(id))!;
    const frozen = await cgroup.isFrozen();
    const known: FreezeState = record.freeze ?? NEVER_FROZEN;
    if (known.frozen === frozen) return { record, cgroup, state: known };
    const state = frozen ? { ...known, frozen, frozenAt: Date.now() } : { ...known, generation: known.generation + 1, frozen, thawedAt: Date.now() };
    return { record, cgroup, state: await this.recordFreeze(record, state) };
  }

  private async recordFreeze(record: SandboxRecord, state: FreezeState): Promise<FreezeState> {
    await this.store.write({ ...record, freeze: state });
    return state;
  }

  async isFrozen(id: string): Promise<boolean> {
    const record = await this.store.read(id);
    if (!record || record.phase !== 'running') return false;
    return this.cgroups.open(record.cgroupDirs).isFrozen();
  }

  async status(id: string): Promise<SandboxStatus | undefined> {
    assertSandboxId(id);
    const record = await this.store.read(id);
    if (!record) return undefined;
    const base = { id, workspaceId: record.spec.workspaceId, socketPath: this.socketPath(id), memoryMb: record.spec.memoryMb };
    if (!(await this.isAlive(record))) return { ...base, state: 'stopped' };
    const cgroup = this.cgroups.open(record.cgroupDirs);
    const [frozen, memoryUsageBytes, oomKills] = await Promise.all([cgroup.isFrozen(), cgroup.memoryUsageBytes(), cgroup.oomKills()]);
    const network = record.network && this.options.network ? { address: record.network.address, ...this.options.network.trafficOf(id) } : undefined;
    return { ...base, state: frozen ? 'frozen' : 'running', pid: record.pid, startedAt: record.startedAt, memoryUsageBytes, oomKills, ...(network ? { network } : {}) };
  }

  async list(): Promise<SandboxStatus[]> {
    const ids = (await this.store.ids()).filter((id) => !isWarmId(id));
    const statuses = await Promise.all(ids.map((id) => this.status(id)));
    return statuses.filter((s): s is SandboxStatus => s !== undefined);
  }

  async activity(id: string): Promise<SandboxActivity> {
    await this.liveCgroup(id);
    return new SandboxAgentClient(this.socketPath(id)).activity();
  }

  /** Host pids of the sandbox's processes (for tests and diagnostics). */
  async pids(id: string): Promise<number[]> {
    const record = await this.store.read(id);
    return record ? this.cgroups.open(record.cgroupDirs).pids() : [];
  }

  private async liveCgroup(id: string): Promise<SandboxCgroup> {
    assertSandboxId(id);
    const record = await this.store.read(id);
    if (!record) throw new SandboxNotFoundError(id);
    if (!(await this.isAlive(record))) throw new SandboxNotFoundError(id);
    return this.cgroups.open(record.cgroupDirs);
  }

  private async isAlive(record: SandboxRecord): Promise<boolean> {
    if (record.phase !== 'running' || !record.pid || record.pidStartTicks === undefined) return false;
    if (!isSameProcess(record.pid, record.pidStartTicks)) return false;
    return (await this.cgroups.open(record.cgroupDirs).pids()).includes(record.pid);
  }

  private handle(record: SandboxRecord): SandboxHandle {
    return {
      id: record.spec.id,
      workspaceId: record.spec.workspaceId,
      socketPath: this.socketPath(record.spec.id),
      pid: record.pid!,
      startedAt: record.startedAt!,
    };
  }

  private limits(spec: RuntimeSandboxSpec) {
    return { memoryBytes: spec.memoryMb * 1024 * 1024, pidsMax: this.options.pidsMax ?? 4096 };
  }

  private identity(): SandboxUser {
    return { uid: this.uid, gid: this.gid };
  }

  private agentDir(): string {
    const dir = this.options.agentDir ?? path.resolve(__dirname, '..', 'sandbox-agent');
    if (!fs.existsSync(path.join(dir, 'main.js'))) {
      throw new Error(`the sandbox agent is not built (no ${path.join(dir, 'main.js')}): run npm run build`);
    }
    return dir;
  }

  /** One operation at a time per sandbox: a start racing a stop would leave either half done. */
  private exclusive<T>(id: string, operation: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(id) ?? Promise.resolve();
    const next = previous.then(operation, operation);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.locks.set(id, settled);
    void settled.then(() => {
      if (this.locks.get(id) === settled) this.locks.delete(id);
    });
    return next;
  }
}

/**
 * A smaller young generation keeps each idle agent's memory down (a hundred of them share a
 * node); the agent's work is I/O, not allocation-heavy.
 */
export const AGENT_NODE_FLAGS = ['--max-semi-space-size=1'];

/**
 * The launcher's command before bubblewrap: nothing, or entering the network namespace the node
 * made (nsenter with the namespace's file; no other namespace is entered).
 */
function enterNetwork(network: SandboxAttachment | undefined, nsenterPath: string | undefined): string[] {
  return network ? [nsenterPath ?? findOnPath('nsenter'), `--net=${network.netnsPath}`, '--'] : [];
}

/** Why the launcher ended before the agent answered: its exit codes of its own (97, 96), or bubblewrap's. */
function launchFailure(code: number | null, signal: NodeJS.Signals | null): string {
  if (code === 97) return 'could not join the sandbox cgroups';
  if (code === OVERLAY_MOUNT_FAILED) return "could not mount the sandbox's root overlay";
  return `the sandbox exited (${signal ?? `code ${code}`})`;
}

function defaultNodeModulesDir(): string {
  const entry = require.resolve('@modelcontextprotocol/sdk/server/mcp.js');
  return entry.slice(0, entry.lastIndexOf(`${path.sep}node_modules${path.sep}`) + `${path.sep}node_modules`.length);
}

async function tail(file: string, bytes: number): Promise<string> {
  try {
    const text = await fsp.readFile(file, 'utf8');
    return text.slice(-bytes).trim();
  } catch {
    return '';
  }
}
