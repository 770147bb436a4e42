import type { ActivityDeps } from './deps';

export type { ActivityDeps } from './deps';

/** Every activity the control worker runs, built from the services of its process. */
export function createActivities(_deps: ActivityDeps) {
  return {};
}
