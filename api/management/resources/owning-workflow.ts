import type { ResourceStore } from '../../../store/resources';

/**
 * Starts the workflow that drives a resource just inserted as DEPLOYING. Without its workflow the
 * row would stay DEPLOYING forever, so a failed start takes the row back before rethrowing.
 */
export async function startOwningWorkflow(store: ResourceStore, rowId: string, start: () => Promise<unknown>): Promise<void> {
  try {
    await start();
  } catch (err) {
    await store.deleteById(rowId);
    throw err;
  }
}
