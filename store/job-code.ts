import type { Pool } from 'pg';
import { bundlePaths } from '../domain/workloads/bundles';

export interface JobCode {
  /** The unpacked bundle on this node. */
  dir: string;
  revision: number;
  /** The job's spec as of that revision (what its code was deployed with). */
  spec: Record<string, unknown>;
}

/**
 * The code an execution of the job runs: its newest DEPLOYED revision's bundle, unpacked under
 * `<dataDir>/bundles/<sha256>/`. Undefined while the job has no deployed code. The only place
 * executions learn about revisions, so a change in how bundles are kept is a change here.
 */
export async function jobCode(pg: Pool, dataDir: string, jobId: string): Promise<JobCode | undefined> {
  const { rows } = await pg.query<{ revision: number; bundle_sha256: string; spec: Record<string, unknown> }>(
    `SELECT revision, bundle_sha256, spec FROM workload_revisions
      WHERE resource_id = $1 AND status = 'DEPLOYED' AND bundle_sha256 IS NOT NULL
      ORDER BY revision DESC LIMIT 1`,
    [jobId],
  );
  const row = rows[0];
  if (!row) return undefined;
  return { dir: bundlePaths(dataDir, row.bundle_sha256).unpacked, revision: row.revision, spec: row.spec };
}
