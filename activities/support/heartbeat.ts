import { Context } from '@temporalio/activity';

const BEAT_MS = 1_000;

/**
 * Runs `work` while telling Temporal every second that this worker is alive, so an activity
 * proxied with a short heartbeat timeout is retried elsewhere within seconds when the worker
 * dies mid-way, instead of after its whole start-to-close timeout.
 */
export async function whileHeartbeating<T>(work: () => Promise<T>): Promise<T> {
  const context = Context.current();
  context.heartbeat();
  const beat = setInterval(() => context.heartbeat(), BEAT_MS);
  try {
    return await work();
  } finally {
    clearInterval(beat);
  }
}
