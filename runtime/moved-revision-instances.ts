import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Pool } from 'pg';
import { revisionOfSandboxId } from '../domain/workloads/workload';
import { workloadSocketsDir } from './layout';
import type { SandboxRuntime } from './sandbox-runtime';

/**
 * Removes this node's workload instances whose revision is placed on another node now (moved
 * off this node while it was LOST): a node coming back must not serve a second copy of what
 * serves elsewhere. The node worker does this before it takes work. Revisions with no node
 * recorded (deployed before placement) stay: they are this node's as far as anyone knows.
 * Answers the instances it removed.
 */
export async function removeMovedRevisionInstances(runtime: Pick<SandboxRuntime, 'list' | 'remove'>, pg: Pool, nodeId: string, dataDir: string): Promise<string[]> {
  const instances = (await runtime.list()).flatMap((sandbox) => {
    const revision = revisionOfSandboxId(sandbox.id);
    return revision ? [{ id: sandbox.id, ...revision }] : [];
  });
  if (instances.length === 0) return [];
  const { rows } = await pg.query<{ resource_id: string; revision: number }>(
    `SELECT i.resource_id, i.revision FROM unnest($1::uuid[], $2::int[]) AS i(resource_id, revision)
       JOIN workload_revisions wr USING (resource_id, revision)
      WHERE wr.node_id IS NOT NULL AND wr.node_id <> $3`,
    [instances.map((i) => i.resourceId), instances.map((i) => i.revision), nodeId],
  );
  const moved = instances.filter((i) => rows.some((row) => row.resource_id === i.resourceId && row.revision === i.revision)).map((i) => i.id);
  const socketsDir = workloadSocketsDir(dataDir);
  for (const id of moved) {
    await runtime.remove(id);
    for (const name of await fsp.readdir(socketsDir).catch(() => [] as string[])) {
      if (name.startsWith(`${id}-`)) await fsp.rm(path.join(socketsDir, name), { force: true });
    }
  }
  return moved;
}
