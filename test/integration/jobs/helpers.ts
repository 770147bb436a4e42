import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Pool } from 'pg';
import { bundlePaths } from '../../../domain/workloads/bundles';

/**
 * Gives a job deployed code the way the deployment pipeline leaves it: the files unpacked under
 * `<dataDir>/bundles/<sha256>/`, a DEPLOYED revision pointing at them, the resource DEPLOYED.
 * (The pipeline's own tests cover uploads; these tests are about executions.)
 */
export async function deployJobCode(pg: Pool, dataDir: string, jobId: string, files: Record<string, string>): Promise<string> {
  const digest = createHash('sha256').update(JSON.stringify(Object.entries(files).sort())).digest('hex');
  const dir = bundlePaths(dataDir, digest).unpacked;
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), content, { mode: 0o644 });
  await pg.query(
    `INSERT INTO workload_revisions (resource_id, revision, bundle_sha256, bundle_bytes, spec, status)
     SELECT $1, COALESCE(MAX(revision), 0) + 1, $2, 0, '{}', 'DEPLOYED' FROM workload_revisions WHERE resource_id = $1`,
    [jobId, digest],
  );
  await pg.query(`UPDATE resources SET status = 'DEPLOYED' WHERE id = $1`, [jobId]);
  return dir;
}

/** Intervals [start, end] and the largest number of them open at one instant. */
export function maxOverlap(intervals: [number, number][]): number {
  const points = intervals.flatMap(([start, end]) => [
    [start, 1],
    [end, -1],
  ]);
  // Ends before starts at the same instant: touching intervals do not overlap.
  points.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let most = 0;
  for (const [, delta] of points) {
    open += delta;
    most = Math.max(most, open);
  }
  return most;
}
