import type { Pool } from 'pg';
import { BUILT_BASE_IMAGE, isBuiltBaseImage, isRegistryImage } from '../domain/images/builtin';
import { parseWorkspaceImage } from '../domain/images/workspace-image';
import { NodeImageStore } from './node-images';
import { canonicalReference } from './registry-images';
import { WorkspaceImageStore } from './workspace-images';

/**
 * The bytes the platform stores for the image a workload runs on, as the control plane knows it
 * (workloads are metered by their workflow, not by the node, so this is read from the rows the
 * nodes and builds leave): an image the workspace built, its build's size; base-image, the size a
 * node recorded when it built it; a registry image, the size of the workspace's pull. `base`, the
 * host's own folders, stores nothing. The two per-node kinds prefer the row of the node the workload
 * runs on (`node`, asked only for them), and otherwise take the latest READY one (the same recipe or digest has the same
 * size on every node). This is the figure a sandbox on the same image is billed by its node.
 */
export async function storedImageBytes(pg: Pool, input: { workspaceId: string; image: string | undefined; node: () => Promise<string | undefined> }): Promise<number> {
  const { workspaceId, image } = input;
  if (image === undefined) return 0;
  const own = parseWorkspaceImage(image);
  if (own) return Number((await new WorkspaceImageStore(pg).find(workspaceId, own.name, own.tag))?.size_bytes ?? 0);
  if (isBuiltBaseImage(image)) {
    // Newest first; the workload's node's READY row when it has one, else the newest READY.
    const ready = (await new NodeImageStore(pg).list(BUILT_BASE_IMAGE)).filter((row) => row.state === 'READY' && row.size_bytes !== null);
    const nodeId = await input.node();
    return Number((ready.find((row) => row.node_id === nodeId) ?? ready[0])?.size_bytes ?? 0);
  }
  if (isRegistryImage(image)) {
    const { rows } = await pg.query<{ size_bytes: string }>(
      `SELECT i.size_bytes FROM registry_images i LEFT JOIN nodes n ON n.task_queue = i.node_queue
       WHERE i.workspace_id = $1 AND i.reference = $2 AND i.state = 'READY' AND i.size_bytes IS NOT NULL
       ORDER BY n.id = $3 DESC NULLS LAST, i.updated_at DESC LIMIT 1`,
      [workspaceId, canonicalReference(image), (await input.node()) ?? null],
    );
    return Number(rows[0]?.size_bytes ?? 0);
  }
  return 0;
}

/** The node a workload's newest placed revision runs on; undefined before any is placed. */
export async function workloadNode(pg: Pool, resourceId: string): Promise<string | undefined> {
  const { rows } = await pg.query<{ node_id: string }>(
    'SELECT node_id FROM workload_revisions WHERE resource_id = $1 AND node_id IS NOT NULL ORDER BY revision DESC LIMIT 1',
    [resourceId],
  );
  return rows[0]?.node_id;
}
