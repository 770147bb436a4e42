import type { Pool, PoolClient } from 'pg';
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

/** Inserts the next revision of the resource; its row lock must be held. */
async function insertRevision(client: PoolClient, input: { resourceId: string; bundleSha256: string | null; bundleBytes: number | null; spec: WorkloadSpec; actor: string | null }): Promise<number> {
  const { rows } = await client.query<{ revision: number }>(
    `INSERT INTO workload_revisions (resource_id, revision, bundle_sha256, bundle_bytes, spec, status, created_by)
     SELECT $1, COALESCE(MAX(revision), 0) + 1, $2, $3, $4, 'UPLOADING', $5 FROM workload_revisions WHERE resource_id = $1
     RETURNING revision`,
    [input.resourceId, input.bundleSha256, input.bundleBytes, JSON.stringify(input.spec), input.actor],
  );
  return rows[0].revision;
}

/** The revisions of workloads: one row per code upload (or spec change), numbered per resource. */
export class RevisionStore {
  constructor(private readonly pg: Pool) {}

  /**
   * Adds the next revision; the number is taken under the resource's row lock, so concurrent
   * uploads do not collide. Without `spec`, the revision gets the resource's spec as it is under
   * that lock: an update committed before it is never lost to an upload that read the row earlier.
   */
  async create(input: { resourceId: string; bundleSha256: string | null; bundleBytes: number | null; spec?: WorkloadSpec; actor: string | null }): Promise<number> {
    return inTransaction(this.pg, async (client) => {
      const locked = await client.query<{ spec: WorkloadSpec }>('SELECT spec FROM resources WHERE id = $1 FOR UPDATE', [input.resourceId]);
      return insertRevision(client, { ...input, spec: input.spec ?? locked.rows[0]?.spec ?? {} });
    });
  }

  /**
   * Under the resource's row lock, when `needed(latest, spec)` says so for the latest revision
   * and the resource's current spec: adds the next revision of the latest one's bundle with that
   * spec. Answers its number, or undefined when none was needed (or there is no bundle to reuse).
   * Decided and written in one transaction, so concurrent updates end with a revision of the last.
   */
  async createFromLatestBundle(resourceId: string, actor: string | null, needed: (latest: RevisionRecord, spec: WorkloadSpec) => boolean): Promise<number | undefined> {
    return inTransaction(this.pg, async (client) => {
      const locked = await client.query<{ spec: WorkloadSpec }>('SELECT spec FROM resources WHERE id = $1 FOR UPDATE', [resourceId]);
      const { rows } = await client.query<{ revision: number; bundle_sha256: string | null; bundle_bytes: string | null; spec: WorkloadSpec }>(
        'SELECT revision, bundle_sha256, bundle_bytes, spec FROM workload_revisions WHERE resource_id = $1 ORDER BY revision DESC LIMIT 1',
        [resourceId],
      );
      const [row] = rows;
      if (!locked.rows[0] || !row?.bundle_sha256) return undefined;
      const latest: RevisionRecord = { resourceId, revision: row.revision, bundleSha256: row.bundle_sha256, bundleBytes: Number(row.bundle_bytes ?? 0), spec: row.spec };
      if (!needed(latest, locked.rows[0].spec)) return undefined;
      return insertRevision(client, { resourceId, bundleSha256: latest.bundleSha256, bundleBytes: latest.bundleBytes, spec: locked.rows[0].spec, actor });
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
