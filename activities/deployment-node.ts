import { ApplicationFailure, heartbeat } from '@temporalio/activity';
import type { Pool } from 'pg';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import * as tar from 'tar';
import { bundleEntryProblem, bundlePaths } from '../domain/workloads/bundles';
import {
  DEFAULT_WORKLOAD_MEMORY_MB,
  MAX_READINESS_SECONDS,
  WORKLOAD_APP_DIR,
  bundleFilesNamedBy,
  reportedExitCode,
  supervisedCommandLine,
  revisionSandboxId,
  shellLine,
  workloadCommand,
  workloadEnvironment,
  workloadPort,
  type WorkloadKey,
  type WorkloadSpec,
} from '../domain/workloads/workload';
import { workloadNetwork } from '../domain/workloads/network';
import { PLATFORM_SOCKET_ENV, PLATFORM_TOKEN_ENV } from '../domain/workloads/platform-credential';
import type { PlatformServices } from '../runtime/platform-services/platform-services';
import { NO_PLATFORM_EGRESS, type PlatformEgress } from '../runtime/platform-services/egress';
import { SANDBOX_PLATFORM_SOCKET, sandboxLayout, workloadSocketsDir } from '../runtime/layout';
import { DEFAULT_PORT_WAIT_SECONDS } from '../sandbox-agent/contract/limits';
import type { ProcessRecord, ProcessRequest } from '../sandbox-agent/contract/process';
import { SandboxSpecError } from '../runtime/sandbox-runtime';
import { ResourceStore } from '../store/resources';
import type { BuiltinWorkloads } from '../runtime/builtin-workloads';
import { AgentError, SandboxAgentClient } from '../runtime/agent-client';
import { pinSocket } from '../runtime/pinned-socket';
import type { NodeRuntime } from './sandbox-node';
import { HOST_IMAGE, UNRECORDED_IMAGE } from '../domain/images/builtin';

/** How long a new revision may take to listen on its port, unless its spec says otherwise. */
const DEFAULT_READINESS_SECONDS = 30;
/** A crashed workload is restarted by the sandbox agent up to this many times. */
const MAX_RESTARTS = 1000;
/** Node inside the workload finds the platform's packages (the MCP SDK) here. */
const SANDBOX_NODE_MODULES = '/opt/hangar/node_modules';

/** The name of a revision's one process in its sandbox. */
const WORKLOAD_PROCESS = 'workload';
/** Calls to the revision's sandbox API other than the start; none of them should take long. */
const AGENT_CALL = { timeoutMs: 10_000 };

/** A deployment step that failed for a reason retrying cannot fix: the user's bundle or command. */
const userError = (message: string) => ApplicationFailure.nonRetryable(message, 'WorkloadDeployError');

export interface StartRevisionInput {
  key: WorkloadKey;
  revision: number;
  spec: WorkloadSpec;
  /** Host folder bound read-only at /app (an unpacked bundle, or built-in code). */
  appDir: string;
  /** Built-in code (an integration's MCP server): command and environment are resolved on the node. */
  builtin?: boolean;
}

/** What the node side of deployments works with. */
interface DeploymentNode {
  runtime: NodeRuntime;
  dataDir: string;
  builtins?: BuiltinWorkloads;
  platform: PlatformServices;
  /** Host folder (root's only) of the links to workload sockets: nothing in a sandbox can swap them. */
  socketsDir: string;
}

/** Checks every entry of the archive (paths, types) without unpacking it. */
async function checkArchive(archive: string): Promise<void> {
  const problems: string[] = [];
  try {
    await tar.t({ file: archive, strict: true, onReadEntry: (entry) => {
      const problem = bundleEntryProblem(entry.path, entry.type);
      if (problem) problems.push(problem);
      entry.resume();
    } });
  } catch (err) {
    throw userError(`bad bundle: not a readable tar.gz archive (${(err as Error).message})`);
  }
  if (problems.length > 0) throw userError(`bad bundle: ${problems.slice(0, 3).join('; ')}`);
}

/** Unpacks a checked archive into `unpacked` through a staging folder, so a half-unpacked bundle is never seen. */
async function unpackArchive(archive: string, unpacked: string): Promise<void> {
  const staging = `${unpacked}.${randomBytes(4).toString('hex')}`;
  await fsp.mkdir(staging, { recursive: true, mode: 0o755 });
  try {
    // Owned by root, readable by all: the workload sees its code but cannot change it.
    await tar.x({ file: archive, cwd: staging, strict: true, preserveOwner: false, noChmod: true, dmode: 0o755, fmode: 0o644 } as tar.TarOptionsWithAliasesAsyncFile);
    await fsp.chmod(staging, 0o755);
    await fsp.rename(staging, unpacked).catch(async (err: NodeJS.ErrnoException) => {
      // Another worker unpacked the same digest first.
      if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
      await fsp.rm(staging, { recursive: true, force: true });
    });
  } catch (err) {
    await fsp.rm(staging, { recursive: true, force: true });
    if (err instanceof ApplicationFailure) throw err;
    throw userError(`bad bundle: could not unpack (${(err as Error).message})`);
  }
}

/** Checks the archive (paths, entry types) and unpacks it once per digest; answers the folder. */
async function unpackBundle(dataDir: string, sha256: string, spec: WorkloadSpec): Promise<string> {
  const paths = bundlePaths(dataDir, sha256);
  if (!fs.existsSync(paths.unpacked)) {
    if (!fs.existsSync(paths.archive)) throw userError(`bad bundle: the archive ${sha256} is missing on this node`);
    await checkArchive(paths.archive);
    await unpackArchive(paths.archive, paths.unpacked);
  }
  const missing = bundleFilesNamedBy(workloadCommand(spec)).filter((file) => !fs.existsSync(path.join(paths.unpacked, file)));
  if (missing.length > 0) throw userError(`the command ${shellLine(workloadCommand(spec))} needs ${missing.join(', ')}, which the bundle does not contain`);
  return paths.unpacked;
}

function requireBuiltins(builtins: BuiltinWorkloads | undefined): BuiltinWorkloads {
  if (!builtins) throw new Error('this node worker cannot run built-in workloads (no platform configuration)');
  return builtins;
}

/** The revision's sandbox, with its code at /app (WORKLOAD_APP_DIR), read-only. */
async function startRevisionSandbox(runtime: NodeRuntime, input: StartRevisionInput, id: string) {
  const { key, spec } = input;
  try {
    return await runtime.start({
      id,
      workspaceId: key.workspaceId,
      name: key.name,
      // The platform's own code (an integration's MCP server) is built for the node's Node: on the host's folders.
      image: input.builtin ? HOST_IMAGE : (spec.runtime?.image ?? UNRECORDED_IMAGE),
      memoryMb: spec.runtime?.memory ?? DEFAULT_WORKLOAD_MEMORY_MB,
      envs: [],
      volumes: [],
      // Linked rather than mounted, so a warm sandbox can take it.
      code: input.appDir,
      network: workloadNetwork(spec),
    });
  } catch (err) {
    if (err instanceof SandboxSpecError) throw userError(err.message);
    throw err;
  }
}

/** The command a revision runs, the environment added to the spec's, and where it may reach out. */
async function revisionCommand(node: DeploymentNode, input: StartRevisionInput): Promise<{ command: string[]; environment: Record<string, string>; egress: PlatformEgress }> {
  if (!input.builtin) return { command: workloadCommand(input.spec), environment: {}, egress: NO_PLATFORM_EGRESS };
  const builtin = await requireBuiltins(node.builtins).resolve(input.key, input.spec);
  return { command: builtin.command, environment: builtin.environment, egress: builtin.egress };
}

/** Whether a workload process is down or was restarted: it failed to listen. */
function hasExited(record: ProcessRecord): boolean {
  return record.status !== 'running' || record.restartCount > 0 || reportedExitCode(record.stderr ?? '') !== undefined;
}

/**
 * Starts the workload process; answers whether it is known to listen. The agent answers once
 * the port listens (or the command ends): no polling round trips on the way, which a start from
 * zero, with a request waiting, would feel.
 */
async function startWorkloadProcess(agent: SandboxAgentClient, request: ProcessRequest, readiness: number, began: number): Promise<boolean> {
  const beating = setInterval(() => heartbeat(), 5_000);
  const readinessOver = AbortSignal.timeout(readiness * 1000);
  const started = await agent
    .startProcess(request, { signal: readinessOver })
    .catch((err: Error) => {
      if (err instanceof AgentError) throw userError(`the command could not start: ${err.reason}`);
      if (!readinessOver.aborted) throw err;
      return undefined;
    })
    .finally(() => clearInterval(beating));
  // Answered with the command running as first started, before the agent's own wait ran out: it listens.
  return started !== undefined && !hasExited(started) && Date.now() - began < (DEFAULT_PORT_WAIT_SECONDS - 1) * 1000;
}

/** Polls the workload process until it listens on `port`; fails for good when it exits or the deadline passes. */
async function awaitListening(agent: SandboxAgentClient, port: number, deadline: number, readiness: number): Promise<void> {
  for (;;) {
    heartbeat();
    const record = await agent.findProcess(WORKLOAD_PROCESS, AGENT_CALL);
    if (!record) throw userError(`the command's process is gone before listening on port ${port}`);
    if (hasExited(record)) {
      const code = reportedExitCode(record.stderr ?? '') ?? record.exitCode ?? 'unknown';
      throw userError(`the command exited with code ${code} before listening on port ${port}${tail(record.stderr || record.logs)}`);
    }
    // A process between two of its lives has no sockets to show yet: not listening.
    const sockets = await agent.processPorts(record.pid, AGENT_CALL).catch((err: Error) => {
      if (err instanceof AgentError) return undefined;
      throw err;
    });
    if (sockets?.ports.some((p) => p.port === port && p.state === 'LISTEN')) return;
    if (Date.now() > deadline) throw userError(`the command did not listen on port ${port} within ${readiness} s${tail(record.stderr || record.logs)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Starts the revision's sandbox with the code at /app, starts the command there and waits
 * until it listens on PORT. Fails (for good) when the command exits or never listens in
 * time. Answers the host socket that reaches the port.
 */
async function startRevision(node: DeploymentNode, input: StartRevisionInput): Promise<string> {
  const { key, revision, spec } = input;
  const id = revisionSandboxId(key.id, revision);
  const port = workloadPort(spec);
  const agent = new SandboxAgentClient((await startRevisionSandbox(node.runtime, input, id)).socketPath);
  const { command, environment, egress } = await revisionCommand(node, input);
  await node.platform.open({ sandboxId: id, workspaceId: key.workspaceId, resourceId: key.id, kind: key.kind, egress });
  const extraEnv = { ...environment, [PLATFORM_SOCKET_ENV]: SANDBOX_PLATFORM_SOCKET, [PLATFORM_TOKEN_ENV]: node.platform.credential(id), NODE_PATH: SANDBOX_NODE_MODULES };
  const readiness = Math.min(Number(spec.runtime?.readinessTimeoutSeconds) || DEFAULT_READINESS_SECONDS, MAX_READINESS_SECONDS);
  const began = Date.now();
  // The forwarder connects per connection, so it can open while the command starts.
  const forwarding = agent.forwardPort(port, AGENT_CALL);
  forwarding.catch(() => undefined);
  let listening = false;
  if (!(await agent.findProcess(WORKLOAD_PROCESS, AGENT_CALL))) {
    const request = {
      name: WORKLOAD_PROCESS,
      command: supervisedCommandLine(command),
      workingDir: WORKLOAD_APP_DIR,
      env: workloadEnvironment(key, spec, extraEnv),
      restartOnFailure: true,
      maxRestarts: MAX_RESTARTS,
      waitForPorts: [port],
    };
    listening = await startWorkloadProcess(agent, request, readiness, began);
  }
  if (!listening) await awaitListening(agent, port, began + readiness * 1000, readiness);
  const forward = await forwarding.catch((err: Error) => {
    throw err instanceof AgentError ? new Error(`the port forwarder did not start: ${err.reason}`) : err;
  });
  const inSandbox = path.join(sandboxLayout(node.dataDir, id).runDir, path.basename(forward.socketPath));
  return pinSocket(inSandbox, path.join(node.socketsDir, `${id}-${port}.sock`));
}

async function unlinkSockets(socketsDir: string, sandboxId: string): Promise<void> {
  for (const name of await fsp.readdir(socketsDir).catch(() => [] as string[])) {
    if (name.startsWith(`${sandboxId}-`)) await fsp.rm(path.join(socketsDir, name), { force: true });
  }
}

/**
 * The node side of deployments: unpack and check a bundle, start a revision in its own runtime
 * sandbox and wait until it listens, and remove revisions. Every activity is idempotent.
 */
export function createDeploymentNodeActivities({
  runtime,
  dataDir,
  builtins,
  pg,
  platform,
}: {
  runtime: NodeRuntime;
  dataDir: string;
  builtins?: BuiltinWorkloads;
  pg: Pool;
  platform: PlatformServices;
}) {
  const node: DeploymentNode = { runtime, dataDir, builtins, platform, socketsDir: workloadSocketsDir(dataDir) };
  const resources = new ResourceStore(pg);

  return {
    /** Checks the archive (paths, entry types) and unpacks it once per digest; answers the folder. */
    unpackBundle: (sha256: string, spec: WorkloadSpec): Promise<string> => unpackBundle(dataDir, sha256, spec),

    /** Checks that a workload without a bundle is built in (and its connection exists); answers its code folder. */
    async prepareBuiltin(key: WorkloadKey, spec: WorkloadSpec): Promise<string> {
      return (await requireBuiltins(builtins).resolve(key, spec)).appDir;
    },

    /** Starts a revision and waits until it listens; answers the host socket that reaches its port. */
    startRevision: (input: StartRevisionInput): Promise<string> => startRevision(node, input),

    /**
     * Starts a revision that was scaled to zero, for requests waiting in gateways, and marks it
     * RUNNING itself (state, event, the gateways' notice) rather than in a later control
     * activity: gateways forward on that notice, a workflow round trip before the update answers.
     */
    async wakeRevision(input: StartRevisionInput): Promise<string> {
      const began = Date.now();
      const socketPath = await startRevision(node, input);
      // The serving socket with it: a revision moved off a lost node while at zero wakes on another node, at another path.
      const serving = { revision: input.revision, sandboxId: revisionSandboxId(input.key.id, input.revision), socketPath };
      await resources.note(input.key.id, { type: 'Normal', message: `revision ${input.revision}: started again for a request in ${Date.now() - began} ms` }, { scale: 'RUNNING', serving });
      return socketPath;
    },

    /**
     * Removes a revision's sandbox, processes and files: when it is replaced, deleted or scaled to
     * zero (its next start begins afresh, from a warm sandbox when one waits).
     */
    async removeRevision(sandboxId: string): Promise<void> {
      await platform.close(sandboxId);
      await unlinkSockets(node.socketsDir, sandboxId);
      await runtime.remove(sandboxId);
    },
  };
}

export type DeploymentNodeActivities = ReturnType<typeof createDeploymentNodeActivities>;

function tail(output: string): string {
  const text = output.trim();
  return text ? `; its output: ${text.slice(-500)}` : '';
}
