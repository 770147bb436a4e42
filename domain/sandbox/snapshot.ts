import { NAME_MAX_LENGTH } from '../names';
import type { SandboxEnv, SandboxSpec } from './sandbox';

/**
 * A snapshot: the files of a sandbox's writable layer (home, workspace, tmp folders) at one
 * moment, kept on the sandbox's node, with the spec the sandbox ran. It belongs to the workspace
 * and outlives its sandbox; new sandboxes start from it (forks).
 */
export interface SnapshotKey {
  /** The snapshot's uuid: its files' folder on the node and its workflow's id. */
  id: string;
  workspace: string;
  workspaceId: string;
  name: string;
}

/** As the reference spells them: being captured, usable, or failed (with a message). */
export type SnapshotStatus = 'pending' | 'ready' | 'failed';

/** One workflow per snapshot: capture, then wait for the deletion, which removes the files. */
export function snapshotWorkflowId(workspace: string, snapshotId: string): string {
  return `snapshot/${workspace}/${snapshotId}`;
}

/** `<source>-<suffix>`, cut so that it stays a valid name. */
export function generatedSnapshotName(source: string, suffix: string): string {
  return `${source.slice(0, NAME_MAX_LENGTH - suffix.length - 1)}-${suffix}`;
}

/**
 * The envs of a fork, as the reference defines them: a variable the source carries takes the
 * fork's value, one it does not is added, every other of the source is kept (in its order).
 */
export function forkEnvs(source: readonly SandboxEnv[], overrides: readonly SandboxEnv[]): SandboxEnv[] {
  const given = new Map(overrides.map((env) => [env.name, env.value]));
  const kept = source.map((env) => (given.has(env.name) ? { name: env.name, value: given.get(env.name)! } : env));
  const known = new Set(source.map((env) => env.name));
  const added = [...given].filter(([name]) => !known.has(name)).map(([name, value]) => ({ name, value }));
  return [...kept, ...added];
}

/**
 * The spec a fork starts with: what the source ran (image and the connection pulling it, memory, ports, region, envs with the
 * fork's on top). Not its lifetime rules (ttl, expires, expiration policies: the source's may be
 * nearly spent; the fork sets its own with an update) nor its volumes (a volume's files are not
 * the sandbox's: two sandboxes writing one volume is for the user to choose).
 */
export function forkSpec(source: SandboxSpec, envs: readonly SandboxEnv[] = []): SandboxSpec {
  const { image, registryConnection, memory, ports, snapshotEnabled } = source.runtime ?? {};
  const runtime = {
    ...(image === undefined ? {} : { image }),
    ...(registryConnection === undefined ? {} : { registryConnection }),
    ...(memory === undefined ? {} : { memory }),
    ...(ports === undefined ? {} : { ports }),
    ...(snapshotEnabled === undefined ? {} : { snapshotEnabled }),
    envs: forkEnvs(source.runtime?.envs ?? [], envs),
  };
  return { ...(source.region === undefined ? {} : { region: source.region }), runtime };
}

/** What the reference shows of the source's spec on a snapshot. */
export function snapshotSpecView(source: SandboxSpec): { image?: string; memory?: number; ports?: unknown; region?: string } {
  const { image, memory, ports } = source.runtime ?? {};
  return {
    ...(image === undefined ? {} : { image }),
    ...(memory === undefined ? {} : { memory }),
    ...(ports === undefined ? {} : { ports }),
    ...(source.region === undefined ? {} : { region: source.region }),
  };
}
