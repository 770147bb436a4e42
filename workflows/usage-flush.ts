import { continueAsNew, proxyActivities, sleep } from '@temporalio/workflow';
import type { UsageActivities } from '../activities/usage-flush';

/** Fixed id: one flush per deployment. */
export const USAGE_FLUSH_WORKFLOW_ID = 'usage-flush';

const { flushUsageOutbox } = proxyActivities<UsageActivities>({
  // A flush returns after about 20 s of work; the long timeout covers a slow ClickHouse insert.
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '2 minutes',
  // No attempt limit: while ClickHouse is down the events wait in the outbox, and each retry
  // (at most 10 s apart) tries again until it is back.
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});

export interface UsageFlushInput {
  /** Pause after a flush that found the outbox empty; bounds how long new events wait. */
  idleMs?: number;
}

// Each round adds a few history events; a fresh run keeps the history short.
const ROUNDS_PER_RUN = 250;

/** Moves accepted usage events from the PostgreSQL outbox to ClickHouse, forever. */
export async function usageFlushWorkflow(input: UsageFlushInput = {}): Promise<void> {
  const idleMs = input.idleMs ?? 1000;
  for (let round = 0; round < ROUNDS_PER_RUN; round++) {
    const result = await flushUsageOutbox();
    if (!result.more) await sleep(idleMs);
  }
  await continueAsNew<typeof usageFlushWorkflow>(input);
}
