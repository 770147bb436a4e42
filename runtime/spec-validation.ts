import fs from 'node:fs';
import path from 'node:path';
import { volumeMountError } from './bwrap-args';
import { assertSandboxId } from './layout';
import { SandboxSpecError, type RuntimeSandboxSpec } from './sandbox-runtime';

export const MIN_MEMORY_MB = 64;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Refuses, before anything starts, a spec the runtime cannot honour (SandboxSpecError names the field). */
export function validateSpec(spec: RuntimeSandboxSpec): void {
  assertSandboxId(spec.id);
  if (typeof spec.workspaceId !== 'string' || !spec.workspaceId) throw new SandboxSpecError('workspaceId is required');
  if (!Number.isInteger(spec.memoryMb) || spec.memoryMb < MIN_MEMORY_MB) {
    throw new SandboxSpecError(`memory must be a whole number of MB, at least ${MIN_MEMORY_MB}, got ${spec.memoryMb}`);
  }
  for (const env of spec.envs) {
    if (!ENV_NAME.test(env.name)) throw new SandboxSpecError(`envs: '${env.name}' is not a valid variable name`);
    if (typeof env.value !== 'string' || env.value.includes('\0')) throw new SandboxSpecError(`envs: the value of '${env.name}' must be a string without NUL`);
  }
  if (spec.code !== undefined && (!path.isAbsolute(spec.code) || !fs.statSync(spec.code, { throwIfNoEntry: false })?.isDirectory())) {
    throw new SandboxSpecError(`code: the host folder ${spec.code} does not exist`);
  }
  const mountPaths = new Set<string>();
  for (const volume of spec.volumes) {
    const problem = volumeMountError(volume.mountPath);
    if (problem) throw new SandboxSpecError(`volumes: ${problem}`);
    if (mountPaths.has(volume.mountPath)) throw new SandboxSpecError(`volumes: two volumes at ${volume.mountPath}`);
    mountPaths.add(volume.mountPath);
    if (!path.isAbsolute(volume.hostPath) || !fs.statSync(volume.hostPath, { throwIfNoEntry: false })?.isDirectory()) {
      throw new SandboxSpecError(`volumes: the host folder of ${volume.mountPath} does not exist`);
    }
  }
}
