import { ApplicationFailure, Context } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { isRegistryImage } from '../domain/images/builtin';
import { imagePullWorkflowId, type ImagePullInput, type NodePullResult } from '../domain/images/image-pull';
import { failureReason } from '../domain/failure-reason';
import type { SandboxKey, SandboxSpec } from '../domain/sandbox/sandbox';
import { RegistryImageStore } from '../store/registry-images';
import { ResourceStore } from '../store/resources';
import { noteFailed, notePulled, noteWaiting, pullMessage } from './image-pull-node';
import type { ActivityDeps } from './support/activity-deps';

/** How often a waiter copies the pull's progress from the image's row to its resource, and tells Temporal it is alive. */
const RELAY_MS = 1_000;

/**
 * The control plane's side of pulls as workflows: a sandbox waiting for its registry image starts
 * the image-pull workflow of its workspace, node and reference, or joins the one running (its id
 * says which: two sandboxes asking at once pull once), and waits for its outcome, saying so on the
 * sandbox: its events, and its state's `image` with the progress the pull writes on the image's
 * row, copied every second.
 */
export function createImagePullControlActivities({ pg, temporal, config }: Pick<ActivityDeps, 'pg' | 'temporal' | 'config'>) {
  const store = new ResourceStore(pg);
  const images = new RegistryImageStore(pg);

  /** Starts the pull, or finds the one under way with the same id. */
  async function startOrJoin(workflowId: string, input: ImagePullInput): Promise<WorkflowHandle> {
    try {
      return await temporal.workflow.start('imagePull', { taskQueue: config.taskQueue, workflowId, args: [input], workflowIdConflictPolicy: 'USE_EXISTING' });
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return temporal.workflow.getHandle(workflowId);
      throw err;
    }
  }

  /** Copies the row's progress onto the resource while the pull runs. */
  function relay(key: SandboxKey, image: string, nodeQueue: string): () => void {
    const timer = setInterval(() => {
      Context.current().heartbeat();
      void images
        .find(key.workspaceId, image)
        .then(async (rows) => {
          const row = rows.find((candidate) => candidate.node_queue === nodeQueue);
          if (row?.state !== 'PULLING' || !row.progress) return;
          await store.mergeState(key.id, { image: { reference: image, pull: 'PULLING', progress: row.progress, message: pullMessage(image, row.progress) } });
        })
        // Progress is news, not record: the next copy supersedes a failed one.
        .catch(() => undefined);
    }, RELAY_MS);
    return () => clearInterval(timer);
  }

  return {
    /** Waits for the sandbox's registry image on its node through the image-pull workflow; answers the digest. */
    async awaitImagePull(key: SandboxKey, spec: SandboxSpec, nodeQueue: string): Promise<{ digest?: string }> {
      const image = spec.runtime?.image;
      if (image === undefined || !isRegistryImage(image)) return {};
      const registryConnection = spec.runtime?.registryConnection;
      const request = { workspaceId: key.workspaceId, reference: image, requester: key.name, ...(registryConnection === undefined ? {} : { registryConnection }) };
      await noteWaiting(store, key.id, image);
      const handle = await startOrJoin(imagePullWorkflowId(key.workspace, nodeQueue, image, registryConnection), { workspace: key.workspace, nodeQueue, request });
      const stop = relay(key, image, nodeQueue);
      try {
        const pulled = (await handle.result()) as NodePullResult;
        stop();
        await notePulled(store, key.id, image, pulled);
        return { digest: pulled.digest };
      } catch (err) {
        stop();
        if (!(err instanceof WorkflowFailedError)) throw err;
        // The pull's own reason (not found, refused...), not the wrappers around it.
        const reason = failureReason(err);
        await noteFailed(store, key.id, image, reason);
        throw ApplicationFailure.nonRetryable(reason, 'ImagePullError');
      }
    },
  };
}

export type ImagePullControlActivities = ReturnType<typeof createImagePullControlActivities>;
