import fsp from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomically } from './atomic-file';
import { assertSandboxId } from './layout';
import type { SandboxRemoval } from './sandbox-runtime';

/** A removal is remembered at least this long: longer than any retry of the activity that asked for it. */
const KEPT_MS = 24 * 60 * 60 * 1000;
/** Forgetting is done at most this often (it reads the whole folder). */
const PRUNE_EVERY_MS = 10 * 60 * 1000;

/**
 * What the node remembers of the sandboxes it removed (`<dataDir>/removals/<id>.json`), written
 * before the sandbox's own folder goes. A remove asked again, as a retried activity whose first
 * answer was lost does, answers what the first one did: usage ends where the sandbox really
 * stopped, and a thaw no one signalled is not lost with the sandbox's folder.
 */
export class RemovalLog {
  private lastPruneAt = 0;

  constructor(private readonly dataDir: string) {}

  private file(id: string): string {
    assertSandboxId(id);
    return path.join(this.dataDir, 'removals', `${id}.json`);
  }

  async read(id: string): Promise<SandboxRemoval | undefined> {
    const text = await fsp.readFile(this.file(id), 'utf8').catch(() => undefined);
    return text === undefined ? undefined : (JSON.parse(text) as SandboxRemoval);
  }

  async write(id: string, removal: SandboxRemoval): Promise<void> {
    const file = this.file(id);
    await fsp.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    await writeFileAtomically(file, JSON.stringify(removal), 0o600);
    await this.prune(removal.stoppedAt);
  }

  /** Forgets how `id` ended: a sandbox started again under the same id is a new life, ended anew. */
  async forget(id: string): Promise<void> {
    await fsp.rm(this.file(id), { force: true });
  }

  private async prune(now: number): Promise<void> {
    if (now - this.lastPruneAt < PRUNE_EVERY_MS) return;
    this.lastPruneAt = now;
    const dir = path.join(this.dataDir, 'removals');
    for (const name of await fsp.readdir(dir).catch(() => [] as string[])) {
      const file = path.join(dir, name);
      const stat = await fsp.stat(file).catch(() => undefined);
      if (stat && now - stat.mtimeMs > KEPT_MS) await fsp.rm(file, { force: true });
    }
  }
}
