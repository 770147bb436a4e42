import type { SandboxNetworkSpec } from '../sandbox/network-policy';
import type { ProviderTarget } from './provider-model';

/** The workload kinds deployed from code bundles, by their /v0 path (also the `kind` column). */
export const WORKLOAD_KINDS = ['agents', 'functions', 'models', 'jobs'] as const;
export type WorkloadKind = (typeof WORKLOAD_KINDS)[number];

export function isWorkloadKind(value: string): value is WorkloadKind {
  return (WORKLOAD_KINDS as readonly string[]).includes(value);
}

/** Identifies one workload everywhere: its resource row, its deployment workflow, its revisions. */
export interface WorkloadKey {
  /** The resource's uuid. */
  id: string;
  workspace: string;
  workspaceId: string;
  kind: WorkloadKind;
  name: string;
}

/** The longest a new revision may take to listen on its port (`spec.runtime.readinessTimeoutSeconds`). */
export const MAX_READINESS_SECONDS = 300;

/** What a workload asks of its runtime (`spec.runtime`), as the deployment reads it. */
export interface WorkloadRuntimeSpec {
  type?: string;
  image?: string;
  /** The `oci-registry` integration connection whose credentials pull `image` (as a sandbox's). */
  registryConnection?: string;
  memory?: number;
  envs?: { name: string; value: string; secret?: boolean }[];
  command?: string[];
  ports?: { name?: string; target: number; protocol?: string }[];
  /** How long a new revision may take to listen on its port before the deployment fails. */
  readinessTimeoutSeconds?: number;
  /** 0: stop after an idle period and start again on the next request; otherwise always on (default 1). */
  minScale?: number;
}

export interface WorkloadSpec {
  runtime?: WorkloadRuntimeSpec;
  integrationConnections?: string[];
  /** Outbound network of each instance, as a sandbox's (see workloadNetwork: none, loopback only). */
  network?: SandboxNetworkSpec;
  [field: string]: unknown;
}

/** One upload of code, and what it became. */
export interface RevisionRecord {
  resourceId: string;
  revision: number;
  bundleSha256: string | null;
  bundleBytes: number;
  spec: WorkloadSpec;
}

/** Where a healthy revision is reached: its runtime sandbox and the host socket of its port. */
export interface ServingRevision {
  revision: number;
  sandboxId: string;
  socketPath: string;
}

/** Where a provider model's revision sends requests: nothing of it runs on a node. */
export interface ProviderServingRevision {
  revision: number;
  provider: ProviderTarget;
}

/**
 * Whether a serving workload's process runs now (`RUNNING`) or was stopped for being idle
 * (`SCALED_TO_ZERO`, with `minScale: 0`); the next gateway request starts it again.
 */
export type WorkloadScaleState = 'RUNNING' | 'SCALED_TO_ZERO';

/**
 * What a workload's `state` field shows: whether the serving revision's process runs, from the
 * runtime facts its deployment records; null while nothing serves (and for jobs, which run per execution).
 */
export function workloadState(status: string, state: { serving?: { socketPath?: string }; scale?: WorkloadScaleState | null }): WorkloadScaleState | null {
  if (status === 'DELETING' || !state.serving?.socketPath) return null;
  return state.scale ?? 'RUNNING';
}

/** Workloads scale to zero only when their spec asks for it: the default minScale is 1 (always on). */
export function scalesToZero(spec: WorkloadSpec): boolean {
  return spec.runtime?.minScale === 0;
}

export const DEFAULT_WORKLOAD_MEMORY_MB = 512;
export const DEFAULT_WORKLOAD_PORT = 8000;
export const DEFAULT_WORKLOAD_COMMAND = ['node', 'main.js'];
/** Where the bundle appears inside the workload's environment (read-only). */
export const WORKLOAD_APP_DIR = '/app';

/** How gateways name a workload's route (and how a deletion names the route to drop). */
export function workloadRouteKey(workspaceId: string, kind: string, name: string): string {
  return `${workspaceId}/${kind}/${name}`;
}

export function deploymentWorkflowId(workspace: string, kind: string, name: string): string {
  return `deploy/${workspace}/${kind}/${name}`;
}

/** The runtime's id for one revision's environment: unique per resource and revision, a valid hostname. */
export function revisionSandboxId(resourceId: string, revision: number): string {
  return `wl-${resourceId}-r${revision}`;
}

/** The resource and revision of a runtime id revisionSandboxId made; undefined for any other id. */
export function revisionOfSandboxId(sandboxId: string): { resourceId: string; revision: number } | undefined {
  const match = /^wl-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-r([1-9][0-9]*)$/.exec(sandboxId);
  return match ? { resourceId: match[1], revision: Number(match[2]) } : undefined;
}

export function workloadPort(spec: WorkloadSpec): number {
  return spec.runtime?.ports?.[0]?.target ?? DEFAULT_WORKLOAD_PORT;
}

export function workloadCommand(spec: WorkloadSpec): string[] {
  const command = spec.runtime?.command;
  return command && command.length > 0 ? command : DEFAULT_WORKLOAD_COMMAND;
}

/** A command as one shell line, every argument quoted, so arguments with spaces or quotes stay whole. */
export function shellLine(args: string[]): string {
  return args.map((arg) => (/^[A-Za-z0-9_./=:@%+-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`)).join(' ');
}

/**
 * The environment of a workload's process: the platform's contract (PORT, HOST, identity) over
 * the user's variables, so a user cannot make the platform look for the process elsewhere.
 */
export function workloadEnvironment(key: Pick<WorkloadKey, 'workspace' | 'kind' | 'name'>, spec: WorkloadSpec, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { name, value } of spec.runtime?.envs ?? []) env[name] = value;
  return {
    ...env,
    ...extra,
    PORT: String(workloadPort(spec)),
    HOST: '127.0.0.1',
    HANGAR_WORKSPACE: key.workspace,
    HANGAR_RESOURCE_KIND: key.kind,
    HANGAR_RESOURCE_NAME: key.name,
  };
}

/** What the supervisor writes to stderr when the command ends, so its code is never lost to a restart. */
export const EXIT_MARKER = '[hangar] the command exited with code';

/**
 * The command under a small shell supervisor: when it ends, its exit code is written to stderr
 * and the shell waits before handing the exit back to the sandbox agent, which restarts it.
 * The wait doubles (up to 10 s) while the command keeps dying within 10 s of its start, and
 * falls back to 0.2 s after a longer life, so a crash loop backs off and a rare crash restarts fast.
 */
export function supervisedCommandLine(args: string[]): string {
  return [
    'f=/tmp/.hangar-restart-delay; d=$(cat $f 2>/dev/null || echo 0.2); s=$(date +%s)',
    `${shellLine(args)}; c=$?`,
    `echo "${EXIT_MARKER} $c" >&2`,
    'if [ $(( $(date +%s) - s )) -ge 10 ]; then d=0.2; fi',
    "sleep $d; awk -v d=$d 'BEGIN { n = d * 2; if (n > 10) n = 10; print n }' > $f",
    'exit $c',
  ].join('\n');
}

/** The last exit code the supervisor reported in the output, if any. */
export function reportedExitCode(output: string): number | undefined {
  const at = output.lastIndexOf(EXIT_MARKER);
  if (at < 0) return undefined;
  const code = Number.parseInt(output.slice(at + EXIT_MARKER.length), 10);
  return Number.isNaN(code) ? undefined : code;
}

/**
 * Arguments of the command that name files of the bundle (relative paths with a script's
 * extension): BUILDING checks they exist, so a typo fails the deployment with a clear reason
 * instead of a crash loop.
 */
export function bundleFilesNamedBy(command: string[]): string[] {
  return command.filter((arg) => !arg.startsWith('-') && !arg.startsWith('/') && /\.(c?js|mjs|py|sh)$/.test(arg));
}
