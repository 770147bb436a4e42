import { WorkspaceImageStore } from '../store/workspace-images';
import type { ActivityDeps } from './support/activity-deps';

/** The control-plane side of a workspace's image: the outcome of a build on its record. */
export function createImageControlActivities({ pg }: Pick<ActivityDeps, 'pg'>) {
  const store = new WorkspaceImageStore(pg);
  return {
    async settleImageBuild(id: string, build: number, outcome: { state: 'READY'; digest: string; sizeBytes: number } | { state: 'FAILED'; reason: string }): Promise<void> {
      await store.settle(id, build, outcome);
    },
  };
}

export type ImageControlActivities = ReturnType<typeof createImageControlActivities>;
