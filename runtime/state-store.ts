import fs from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomically } from './atomic-file';
import { sandboxesDir, sandboxLayout } from './layout';
import type { FreezeState, RuntimeSandboxSpec } from './sandbox-runtime';
import type { SandboxAttachment } from './network/sandbox-network';

/**
 * The runtime's durable record of one sandbox, in its folder. Written before the sandbox's
 * processes start (so a crash mid-start leaves a record to clean up from) and after each change,
 * so a new worker process re-adopts what the previous one started.
 */
export interface SandboxRecord {
  spec: RuntimeSandboxSpec;
  cgroupDirs: string[];
  /** `starting` until the agent answered; `stopped` once its processes are gone. */
  phase: 'starting' | 'running' | 'stopped';
  /** Host pid of bubblewrap and its start time (pid reuse guard). */
  pid?: number;
  pidStartTicks?: number;
  startedAt?: string;
  /** The last freeze or thaw (absent until the first freeze): see FreezeState. */
  freeze?: FreezeState;
  /** Its network namespace and the node's egress services, when it has outbound network. */
  network?: SandboxAttachment;
  /** The last restore to a snapshot done (its request's id): a retried restore answers it again. */
  restoredBy?: string;
  /**
   * The digest of the stored image it started on (none for `base`): a warm sandbox is taken over
   * only by a sandbox on the same build of base-image, and one on an older build is removed.
   */
  imageDigest?: string;
}

export class StateStore {
  constructor(private readonly dataDir: string) {}

  async read(id: string): Promise<SandboxRecord | undefined> {
    try {
      const record = JSON.parse(await fs.readFile(sandboxLayout(this.dataDir, id).stateFile, 'utf8')) as SandboxRecord;
      // A warm sandbox's folder renamed for its new owner by a worker that died before it
      // rewrote the record: a start that did not finish, under the new id.
      if (record.spec.id !== id) return { ...record, spec: { ...record.spec, id }, phase: 'starting' };
      return record;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  /** Atomic: a reader sees the old record or the new one, never half of one. */
  async write(record: SandboxRecord): Promise<void> {
    // Holds environment values the user may consider secret: root only.
    await writeFileAtomically(sandboxLayout(this.dataDir, record.spec.id).stateFile, JSON.stringify(record), 0o600);
  }

  async ids(): Promise<string[]> {
    try {
      const entries = await fs.readdir(sandboxesDir(this.dataDir), { withFileTypes: true });
      const ids: string[] = [];
      for (const entry of entries) {
        if (!entry.isDirectory()) continue;
        const stateFile = path.join(sandboxesDir(this.dataDir), entry.name, 'state.json');
        if (await fs.stat(stateFile).then(() => true, () => false)) ids.push(entry.name);
      }
      return ids;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  }
}
