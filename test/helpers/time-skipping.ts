import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { repoRoot } from '../../scripts/stack/binaries';
import { SEARCH_ATTRIBUTES } from '../../scripts/stack/temporal';

/**
 * A Temporal test environment whose clock jumps ahead whenever every workflow waits on a timer,
 * so a workflow's hours of idle periods and expiries run in milliseconds. @temporalio/testing
 * would download its test server from the internet; we run the Java one scripts/install-deps.sh
 * fetched from Maven Central instead, through a launcher that takes the same arguments. The
 * search attributes our workflows set are registered, as the real stack does.
 */
export async function createTimeSkippingEnvironment(): Promise<TestWorkflowEnvironment> {
  quietWorkers();
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: path.join(repoRoot(), 'scripts', 'temporal-test-server.sh') } },
  });
  const keyword = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(SEARCH_ATTRIBUTES.map((name) => [name, keyword])),
  });
  return env;
}

/**
 * The Java test server rejects a workflow task that cancels a timer which fired while the task ran
 * (temporalio/sdk-java#2606, open); the workflow then stalls for good. Tests count these so that
 * they can tell a stall of the test server from one of the code under test.
 */
const TIMER_BUG = 'invalid history builder state for action';
let rejectedCompletions = 0;

/** How many workflow task completions the test server rejected for its timer bug so far. */
export function testServerTimerRejections(): number {
  return rejectedCompletions;
}

/**
 * Workers log every activity failure; tests that crash activities on purpose would drown their
 * own output. Only possible before the process's first worker: otherwise the runtime stays as is.
 */
function quietWorkers(): void {
  try {
    const logger = new DefaultLogger('WARN', (entry) => {
      const meta = JSON.stringify(entry.meta ?? {});
      if (meta.includes(TIMER_BUG)) rejectedCompletions++;
      else if (entry.message !== 'Activity failed') console.warn(`[temporal worker] ${entry.message} ${meta}`);
    });
    Runtime.install({ logger, telemetryOptions: { logging: { forward: {}, filter: { core: 'WARN', other: 'ERROR' } } } });
  } catch {
    // A runtime is already installed (another test file in this process made a worker).
  }
}
