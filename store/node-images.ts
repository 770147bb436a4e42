import type { Pool } from 'pg';

export type NodeImageState = 'BUILDING' | 'READY' | 'FAILED';

export interface NodeImageRow {
  node_id: string;
  name: string;
  state: NodeImageState;
  digest: string | null;
  size_bytes: string | null;
  reason: string | null;
  updated_at: Date;
}

/** The built-in images each node makes itself (base-image): building, stored, or failed, per node. */
export class NodeImageStore {
  constructor(private readonly pg: Pool) {}

  /** What the node holds of the image now; a READY row keeps its digest and size until the next READY. */
  async record(nodeId: string, name: string, update: { state: NodeImageState; digest?: string; sizeBytes?: number; reason?: string }): Promise<void> {
    await this.pg.query(
      `INSERT INTO node_images (node_id, name, state, digest, size_bytes, reason) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (node_id, name) DO UPDATE SET state = $3, digest = COALESCE($4, node_images.digest), size_bytes = COALESCE($5, node_images.size_bytes), reason = $6, updated_at = now()`,
      [nodeId, name, update.state, update.digest ?? null, update.sizeBytes ?? null, update.reason ?? null],
    );
  }

  /** Every node's row for the image, the most recently changed first. */
  async list(name: string): Promise<NodeImageRow[]> {
    return (await this.pg.query<NodeImageRow>('SELECT * FROM node_images WHERE name = $1 ORDER BY updated_at DESC', [name])).rows;
  }
}
