import type { Client as TemporalClient } from '@temporalio/client';
import type { Pool } from 'pg';
import type { HangarConfig } from '../domain/config';
import type { WorkloadSpec } from '../domain/workloads/workload';
import { deployWithoutBundle } from './deployments';

/** A function bound to a connection, and the revision that brings it the connection's current secrets. */
export interface RolloutTarget {
  resourceId: string;
  name: string;
  revision: number;
}

/**
 * How a function's rollout ended: DEPLOYED (it serves with the new secrets), FAILED (the new
 * revision did not start; the message says why), DELETED (the function went meanwhile), or
 * PENDING (still deploying when the wait ended).
 */
export interface RolloutOutcome {
  function: string;
  revision: number;
  status: 'DEPLOYED' | 'FAILED' | 'DELETED' | 'PENDING';
  message?: string;
}

type Services = { pg: Pool; temporal: TemporalClient; config: HangarConfig };

const POLL_INTERVAL_MS = 100;

/** PostgreSQL's code for a foreign key violation: the function was deleted while its revision was being added. */
const FOREIGN_KEY_VIOLATION = '23503';

/**
 * A function bound to an integration connection runs with the connection's secrets in its
 * environment, read on the node when a revision starts. A change of the secrets reaches a
 * running server only through a new revision: this adds one to every function bound to the
 * connection and hands it to the function's deployment, which replaces the serving revision once
 * the new one is healthy. Call it after the change is stored: a revision that starts later reads
 * the new secrets, whichever revision that is.
 */
export async function startConnectionRollout(
  services: Services,
  workspace: { id: string; name: string },
  connectionName: string,
  actor: string | null,
): Promise<RolloutTarget[]> {
  const { rows } = await services.pg.query<{ id: string; name: string; spec: WorkloadSpec }>(
    `SELECT id, name, spec FROM resources
      WHERE workspace_id = $1 AND kind = 'functions' AND status <> 'DELETING' AND spec->'integrationConnections' ? $2 ORDER BY name`,
    [workspace.id, connectionName],
  );
  const targets: RolloutTarget[] = [];
  for (const row of rows) {
    const key = { id: row.id, workspace: workspace.name, workspaceId: workspace.id, kind: 'functions' as const, name: row.name };
    try {
      const revision = await deployWithoutBundle(services, key, row.spec, actor);
      if (revision !== undefined) targets.push({ resourceId: row.id, name: row.name, revision });
    } catch (err) {
      if ((err as { code?: string }).code !== FOREIGN_KEY_VIOLATION) throw err;
    }
  }
  return targets;
}

/**
 * Where one target stands: settled by its own revision or by a newer one (a deployment
 * collapses revisions that queue up into the newest, and any revision newer than the target's
 * started after the change as well).
 */
async function outcomeOf(pg: Pool, target: RolloutTarget): Promise<RolloutOutcome> {
  const { rows } = await pg.query<{ revision: number; status: 'DEPLOYED' | 'FAILED'; message: string }>(
    `SELECT revision, status, message FROM workload_revisions
      WHERE resource_id = $1 AND revision >= $2 AND status IN ('DEPLOYED', 'FAILED') ORDER BY revision DESC LIMIT 1`,
    [target.resourceId, target.revision],
  );
  const settled = rows[0];
  if (settled) return { function: target.name, revision: settled.revision, status: settled.status, ...(settled.status === 'FAILED' ? { message: settled.message } : {}) };
  const exists = await pg.query('SELECT 1 FROM resources WHERE id = $1', [target.resourceId]);
  return { function: target.name, revision: target.revision, status: exists.rowCount ? 'PENDING' : 'DELETED' };
}

/**
 * Waits until every target's new revision has taken over or failed, at most `timeoutMs`; what
 * is still deploying then is reported PENDING. `onPoll` runs between looks (an activity's
 * heartbeat).
 */
export async function awaitConnectionRollout(
  pg: Pool,
  targets: readonly RolloutTarget[],
  options: { timeoutMs: number; onPoll?: () => void },
): Promise<RolloutOutcome[]> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const outcomes: RolloutOutcome[] = [];
    for (const target of targets) outcomes.push(await outcomeOf(pg, target));
    if (outcomes.every((outcome) => outcome.status !== 'PENDING') || Date.now() >= deadline) return outcomes;
    options.onPoll?.();
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
  }
}
