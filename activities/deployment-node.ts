import { ApplicationFailure, heartbeat } from '@temporalio/activity';
import type { Pool } from 'pg';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import * as tar from 'tar';
import { bundleEntryProblem, bundlePaths } from '../domain/workloads/bundles';
import {
  DEFAULT_WORKLOAD_IMAGE,
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
import { PLATFORM_SOCKET_ENV, PLATFORM_TOKEN_ENV } from '../domain/workloads/platform-credential';
import type { PlatformServices } from '../runtime/platform-services/platform-services';
import { SANDBOX_PLATFORM_SOCKET, sandboxLayout } from '../runtime/layout';
import { DEFAULT_PORT_WAIT_SECONDS } from '../sandbox-agent/process-routes';
import { SandboxSpecError } from '../runtime/sandbox-runtime';
import { ResourceStore } from '../store/resources';
import type { BuiltinWorkloads } from '../runtime/builtin-workloads';
import { callAgent, type AgentReply } from './job-process';
import type { NodeRuntime } from './sandbox-node';

/** How long a new revision may take to listen on its port, unless its spec says otherwise. */
const DEFAULT_READINESS_SECONDS = 30;
/** A crashed workload is restarted by the sandbox agent up to this many times. */
const MAX_RESTARTS = 1000;
/** Node inside the workload finds the platform's packages (the MCP SDK) here. */
const SANDBOX_NODE_MODULES = '/opt/hangar/node_modules';

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
  /** Host folder (root's only) of the links to workload sockets: nothing in a sandbox can swap them. */
  const socketsDir = path.join(dataDir, 'workload-sockets');
  const resources = new ResourceStore(pg);

  const activities = {
    /** Checks the archive (paths, entry types) and unpacks it once per digest; answers the folder. */
    async unpackBundle(sha256: string, spec: WorkloadSpec): Promise<string> {
      const paths = bundlePaths(dataDir, sha256);
      if (!fs.existsSync(paths.unpacked)) {
        if (!fs.existsSync(paths.archive)) throw userError(`bad bundle: the archive ${sha256} is missing on this node`);
        const problems: string[] = [];
        try {
          await tar.t({ file: paths.archive, strict: true, onReadEntry: (entry) => {
            const problem = bundleEntryProblem(entry.path, entry.type);
            if (problem) problems.push(problem);
            entry.resume();
          } });
        } catch (err) {
          throw userError(`bad bundle: not a readable tar.gz archive (${(err as Error).message})`);
        }
        if (problems.length > 0) throw userError(`bad bundle: ${problems.slice(0, 3).join('; ')}`);
        const staging = `${paths.unpacked}.${randomBytes(4).toString('hex')}`;
        await fsp.mkdir(staging, { recursive: true, mode: 0o755 });
        try {
          // Owned by root, readable by all: the workload sees its code but cannot change it.
          await tar.x({ file: paths.archive, cwd: staging, strict: true, preserveOwner: false, noChmod: true, dmode: 0o755, fmode: 0o644 } as tar.TarOptionsWithAliasesAsyncFile);
          await fsp.chmod(staging, 0o755);
          await fsp.rename(staging, paths.unpacked).catch(async (err: NodeJS.ErrnoException) => {
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
      const missing = bundleFilesNamedBy(workloadCommand(spec)).filter((file) => !fs.existsSync(path.join(paths.unpacked, file)));
      if (missing.length > 0) throw userError(`the command ${shellLine(workloadCommand(spec))} needs ${missing.join(', ')}, which the bundle does not contain`);
      return paths.unpacked;
    },

    /** Checks that a workload without a bundle is built in (and its connection exists); answers its code folder. */
    async prepareBuiltin(key: WorkloadKey, spec: WorkloadSpec): Promise<string> {
      if (!builtins) throw new Error('this node worker cannot run built-in workloads (no platform configuration)');
      return (await builtins.resolve(key, spec)).appDir;
    },

    /**
     * Starts the revision's sandbox with the code at /app, starts the command there and waits
     * until it listens on PORT. Fails (for good) when the command exits or never listens in
     * time. Answers the host socket that reaches the port.
     */
    async startRevision(input: StartRevisionInput): Promise<string> {
      const { key, revision, spec } = input;
      const id = revisionSandboxId(key.id, revision);
      const port = workloadPort(spec);
      let handle;
      try {
        handle = await runtime.start({
          id,
          workspaceId: key.workspaceId,
          name: key.name,
          image: spec.runtime?.image ?? DEFAULT_WORKLOAD_IMAGE,
          memoryMb: spec.runtime?.memory ?? DEFAULT_WORKLOAD_MEMORY_MB,
          envs: [],
          volumes: [],
          // At /app (WORKLOAD_APP_DIR) read-only; linked rather than mounted, so a warm sandbox can take it.
          code: input.appDir,
        });
      } catch (err) {
        if (err instanceof SandboxSpecError) throw userError(err.message);
        throw err;
      }
      const socket = handle.socketPath;
      let command = workloadCommand(spec);
      let extraEnv: Record<string, string> = {};
      let egress: string[] = [];
      if (input.builtin) {
        if (!builtins) throw new Error('this node worker cannot run built-in workloads (no platform configuration)');
        const builtin = await builtins.resolve(key, spec);
        command = builtin.command;
        extraEnv = builtin.environment;
        egress = builtin.egress;
      }
      await platform.open({ sandboxId: id, workspaceId: key.workspaceId, resourceId: key.id, kind: key.kind, egress });
      extraEnv = { ...extraEnv, [PLATFORM_SOCKET_ENV]: SANDBOX_PLATFORM_SOCKET, [PLATFORM_TOKEN_ENV]: platform.credential(id) };
      const readiness = Math.min(Number(spec.runtime?.readinessTimeoutSeconds) || DEFAULT_READINESS_SECONDS, MAX_READINESS_SECONDS);
      const began = Date.now();
      const deadline = began + readiness * 1000;
      // The forwarder connects per connection, so it can open while the command starts.
      const forwarding = agentJson(socket, 'POST', '/network/forward', { port });
      forwarding.catch(() => undefined);
      const existing = await agentJson(socket, 'GET', '/process/workload');
      let listening = false;
      if (existing.status === 404) {
        // The agent answers once the port listens (or the command ends): no polling round trips
        // on the way, which a start from zero, with a request waiting, would feel.
        const beating = setInterval(() => heartbeat(), 5_000);
        const readinessOver = AbortSignal.timeout(readiness * 1000);
        const started = await callAgent<unknown>(
          socket,
          'POST',
          '/process',
          {
            name: 'workload',
            command: supervisedCommandLine(command),
            workingDir: WORKLOAD_APP_DIR,
            env: workloadEnvironment(key, spec, { ...extraEnv, NODE_PATH: SANDBOX_NODE_MODULES }),
            restartOnFailure: true,
            maxRestarts: MAX_RESTARTS,
            waitForPorts: [port],
          },
          readinessOver,
        )
          .catch((err: Error) => {
            if (!readinessOver.aborted) throw err;
            return undefined;
          })
          .finally(() => clearInterval(beating));
        if (started && started.status !== 200) throw userError(`the command could not start: ${describe(started.body)}`);
        // Answered with the command running as first started, before the agent's own wait ran out: it listens.
        const view = started?.body as ProcessView | undefined;
        listening =
          view?.status === 'running' && view.restartCount === 0 && reportedExitCode(view.stderr ?? '') === undefined && Date.now() - began < (DEFAULT_PORT_WAIT_SECONDS - 1) * 1000;
      }
      while (!listening) {
        heartbeat();
        const view = (await agentJson(socket, 'GET', '/process/workload')).body as ProcessView;
        if (view.status !== 'running' || view.restartCount > 0 || reportedExitCode(view.stderr ?? '') !== undefined) {
          const code = reportedExitCode(view.stderr ?? '') ?? view.exitCode ?? 'unknown';
          throw userError(`the command exited with code ${code} before listening on port ${port}${tail(view.stderr || view.logs)}`);
        }
        const ports = (await agentJson(socket, 'GET', `/network/process/${view.pid}/ports`)).body as { ports?: { port: number; state: string }[] };
        listening = ports.ports?.some((p) => p.port === port && p.state === 'LISTEN') ?? false;
        if (listening) break;
        if (Date.now() > deadline) throw userError(`the command did not listen on port ${port} within ${readiness} s${tail(view.stderr || view.logs)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const forward = await forwarding;
      if (forward.status !== 200) throw new Error(`the port forwarder did not start: ${describe(forward.body)}`);
      return linkSocket(id, port, path.join(sandboxLayout(dataDir, id).runDir, path.basename((forward.body as { socketPath: string }).socketPath)));
    },

    /**
     * Starts a revision that was scaled to zero, for requests waiting in gateways, and marks it
     * RUNNING itself (state, event, the gateways' notice) rather than in a later control
     * activity: gateways forward on that notice, a workflow round trip before the update answers.
     */
    async wakeRevision(input: StartRevisionInput): Promise<string> {
      const began = Date.now();
      const socketPath = await activities.startRevision(input);
      await resources.note(input.key.id, { type: 'Normal', message: `revision ${input.revision}: started again for a request in ${Date.now() - began} ms` }, { scale: 'RUNNING' });
      return socketPath;
    },

    /**
     * Removes a revision's sandbox, processes and files: when it is replaced, deleted or scaled to
     * zero (its next start begins afresh, from a warm sandbox when one waits).
     */
    async removeRevision(sandboxId: string): Promise<void> {
      await platform.close(sandboxId);
      await unlinkSockets(sandboxId);
      await runtime.remove(sandboxId);
    },
  };
  return activities;

  async function unlinkSockets(sandboxId: string): Promise<void> {
    for (const name of await fsp.readdir(socketsDir).catch(() => [] as string[])) {
      if (name.startsWith(`${sandboxId}-`)) await fsp.rm(path.join(socketsDir, name), { force: true });
    }
  }

  /**
   * The forwarder's socket lives in a folder the workload can write; the gateway must never
   * follow something the workload swapped in (a link to a host socket). A hard link in a root
   * folder pins the socket itself.
   */
  async function linkSocket(sandboxId: string, port: number, inSandbox: string): Promise<string> {
    const stat = await fsp.lstat(inSandbox);
    if (!stat.isSocket()) throw new Error(`the forwarder's socket ${inSandbox} is not a socket`);
    await fsp.mkdir(socketsDir, { recursive: true, mode: 0o700 });
    const pinned = path.join(socketsDir, `${sandboxId}-${port}.sock`);
    await fsp.rm(pinned, { force: true });
    await fsp.link(inSandbox, pinned);
    const linked = await fsp.lstat(pinned);
    if (!linked.isSocket() || linked.ino !== stat.ino) throw new Error('the forwarder socket changed while it was pinned');
    return pinned;
  }
}

export type DeploymentNodeActivities = ReturnType<typeof createDeploymentNodeActivities>;

interface ProcessView {
  pid: number;
  status: string;
  exitCode: number | null;
  restartCount: number;
  stderr: string;
  logs: string;
}

function tail(output: string): string {
  const text = output.trim();
  return text ? `; its output: ${text.slice(-500)}` : '';
}

function describe(body: unknown): string {
  return typeof body === 'object' && body && 'error' in body ? String((body as { error: unknown }).error) : JSON.stringify(body);
}

/** One JSON call to the revision's sandbox API; none of them should take long. */
function agentJson(socketPath: string, method: string, urlPath: string, body?: unknown): Promise<AgentReply<unknown>> {
  return callAgent<unknown>(socketPath, method, urlPath, body, AbortSignal.timeout(10_000));
}
