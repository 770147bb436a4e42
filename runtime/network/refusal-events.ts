import type { Pool } from 'pg';
import { revisionOfSandboxId } from '../../domain/workloads/workload';
import { executionOfSandboxId } from '../../domain/jobs/execution';
import { ExecutionStore } from '../../store/executions';
import { ResourceStore } from '../../store/resources';
import type { EgressRefusal } from './egress-proxy';

/** A sandbox's refusals to the same destination leave one event and one log line a minute at most. */
const REPORT_EVERY_MS = 60_000;
const MAX_REMEMBERED = 10_000;
const RESOURCE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * What the node does with a refused connection or name: a warning in its log and, for a sandbox,
 * workload or job of the platform, an event on it naming the destination and the rule, so a user sees
 * why `pip install` failed. Rate-limited per sandbox and destination: a loop retrying a refused
 * host must not flood either.
 */
export function refusalReporter(pg: Pool | undefined, log: (line: string) => void = console.warn): (refusal: EgressRefusal) => void {
  const stores = pg && { resources: new ResourceStore(pg), executions: new ExecutionStore(pg) };
  const lastReported = new Map<string, number>();
  return (refusal) => {
    const key = `${refusal.sandboxId ?? refusal.source} ${refusal.host}`;
    const now = Date.now();
    if (now - (lastReported.get(key) ?? 0) < REPORT_EVERY_MS) return;
    if (lastReported.size >= MAX_REMEMBERED) lastReported.clear();
    lastReported.set(key, now);
    const message = `egress refused: '${refusal.host}': ${refusal.rule}`;
    log(`sandbox ${refusal.sandboxId ?? `(unknown, ${refusal.source})`}: ${message}`);
    if (!stores || !refusal.sandboxId) return;
    refusingResource(stores.executions, refusal.sandboxId)
      .then((resource) => resource && stores.resources.note(resource.id, { type: 'Warning', message: `${message}${resource.suffix}` }, {}))
      .catch((err: Error) => log(`could not record a refusal event: ${err.message}`));
  };
}

/**
 * The resource whose events tell of a refusal: a sandbox (its id is the resource's), the
 * workload a revision's instance runs (the event names the revision), or the job an execution's
 * sandbox runs (naming the execution). Warm sandboxes and the runtime's own tests have ids that
 * are no resource's.
 */
async function refusingResource(executions: ExecutionStore, sandboxId: string): Promise<{ id: string; suffix: string } | undefined> {
  if (RESOURCE_ID.test(sandboxId)) return { id: sandboxId, suffix: '' };
  const revision = revisionOfSandboxId(sandboxId);
  if (revision) return { id: revision.resourceId, suffix: ` (revision ${revision.revision})` };
  const executionRow = executionOfSandboxId(sandboxId);
  const execution = executionRow ? await executions.owner(executionRow) : undefined;
  return execution && { id: execution.jobId, suffix: ` (execution ${execution.executionId})` };
}
