import { ApplicationFailure } from '@temporalio/activity';
import type { Pool } from 'pg';
import { buildContextPaths } from '../domain/images/build-context';
import { ImagePullError } from '../domain/images/pull-failure';
import type { WorkspaceImageKey } from '../domain/images/workspace-image';
import { BuildahError } from '../runtime/buildah';
import { BuildInputError } from '../runtime/image-builder';
import type { StoredImage } from '../runtime/image-store';
import type { WorkspaceImageBuild } from '../runtime/sandbox-images';
import { SandboxSpecError } from '../runtime/sandbox-runtime';
import { WorkspaceImageStore } from '../store/workspace-images';
import { whileHeartbeating } from './support/heartbeat';

/** What a node does with the images of workspaces (BwrapRuntime through SandboxImages). */
export interface ImageBuildRuntime {
  buildImage(build: WorkspaceImageBuild): Promise<StoredImage>;
  removeWorkspaceImage(workspaceId: string, name: string, tag: string, owner: string): Promise<void>;
}

/** Failures a retry cannot fix: the user's context, Dockerfile or base image, or a step that failed. */
function isUserError(err: unknown): boolean {
  if (err instanceof ImagePullError) return err.kind !== 'unreachable';
  return err instanceof BuildInputError || err instanceof BuildahError || err instanceof SandboxSpecError;
}

/** The node side of a workspace's image: its build (progress on the image's status as it goes) and its removal. */
export function createImageBuildNodeActivities({ runtime, pg, dataDir }: { runtime: ImageBuildRuntime; pg: Pool; dataDir: string }) {
  const store = new WorkspaceImageStore(pg);
  return {
    /** Builds the image from its uploaded context; answers its digest and stored size. */
    buildWorkspaceImage: (key: WorkspaceImageKey, contextSha256: string): Promise<{ digest: string; sizeBytes: number }> =>
      whileHeartbeating(async () => {
        // Steps are recorded in order, each after the one before, without holding the build up.
        let recorded = Promise.resolve();
        try {
          const image = await runtime.buildImage({
            workspaceId: key.workspaceId,
            name: key.name,
            tag: key.tag,
            owner: key.id,
            contextArchive: buildContextPaths(dataDir, contextSha256).archive,
            onStep: (step) => {
              recorded = recorded.then(() => store.progress(key.id, step)).catch(() => undefined);
            },
          });
          return { digest: image.digest, sizeBytes: image.storedBytes };
        } catch (err) {
          if (isUserError(err)) throw ApplicationFailure.nonRetryable((err as Error).message, (err as Error).name);
          throw err;
        } finally {
          await recorded;
        }
      }),
    removeWorkspaceImage: (key: WorkspaceImageKey): Promise<void> => runtime.removeWorkspaceImage(key.workspaceId, key.name, key.tag, key.id),
  };
}

export type ImageBuildNodeActivities = ReturnType<typeof createImageBuildNodeActivities>;
