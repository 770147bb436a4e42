import type { Pool } from 'pg';
import type { RevisionRecord, WorkloadSpec } from '../domain/workloads/workload';
import { inTransaction } from './transaction';

export interface RevisionRow {
  revision: number;
  bundleSha256: string | null;
  bundleBytes: number | null;
  status: string;
  message: string;
  createdAt: string;
}

/** The revisions of workloads: one row per code upload (or spec change), numbered per resource. */
export class RevisionStore {
  constructor(private readonly pg: Pool) {}

  /** Adds the next revision; the number is taken under the resource's row lock, so concurrent uploads do not collide. */
  async create(input: { resourceId: string; bundleSha256: string | null; bundleBytes: number | null; spec: WorkloadSpec; actor: string | null }): Promise<number> {
    return inTransaction(this.pg, async (client) => {
      await client.query('SELECT 1 FROM resources WHERE id = $1 FOR UPDATE', [input.resourceId]);
      const { rows } = await client.query<{ revision: number }>(
        `INSERT INTO workload_revisions (resource_id, revision, bundle_sha256, bundle_bytes, spec, status, created_by)
         SELECT $1, COALESCE(MAX(revision), 0) + 1, $2, $3, $4, 'UPLOADING', $5 FROM workload_revisions WHERE resource_id = $1
         RETURNING revision`,
        [input.resourceId, input.bundleSha256, input.bundleBytes, JSON.stringify(input.spec), input.actor],
      );
      return rows[0].revision;
    });
  }

  async get(resourceId: string, revision: number): Promise<RevisionRecord | undefined> {
    const { rows } = await this.pg.query<{ bundle_sha256: string | null; bundle_bytes: string | null; spec: WorkloadSpec }>(
      'SELECT bundle_sha256, bundle_bytes, spec FROM workload_revisions WHERE resource_id = $1 AND revision = $2',
      [resourceId, revision],
    );
    return rows[0] && { resourceId, revision, bundleSha256: rows[0].bundle_sha256, bundleBytes: Number(rows[0].bundle_bytes ?? 0), spec: rows[0].spec };
  }

  async latest(resourceId: string): Promise<RevisionRecord | undefined> {
    const { rows } = await this.pg.query<{ revision: number }>('SELECT max(revision) AS revision FROM workload_revisions WHERE resource_id = $1', [resourceId]);
    return rows[0]?.revision ? this.get(resourceId, rows[0].revision) : undefined;
  }

  async list(resourceId: string): Promise<RevisionRow[]> {
    const { rows } = await this.pg.query<{ revision: number; bundle_sha256: string | null; bundle_bytes: string | null; status: string; message: string; created_at: Date }>(
      'SELECT revision, bundle_sha256, bundle_bytes, status, message, created_at FROM workload_revisions WHERE resource_id = $1 ORDER BY revision DESC',
      [resourceId],
    );
    return rows.map((r) => ({
      revision: r.revision,
      bundleSha256: r.bundle_sha256,
      bundleBytes: r.bundle_bytes === null ? null : Number(r.bundle_bytes),
      status: r.status,
      message: r.message,
      createdAt: r.created_at.toISOString(),
    }));
  }

  async setStatus(resourceId: string, revision: number, status: string, message: string): Promise<void> {
    await this.pg.query('UPDATE workload_revisions SET status = $3, message = $4 WHERE resource_id = $1 AND revision = $2', [resourceId, revision, status, message]);
  }
}
