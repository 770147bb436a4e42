import { ApplicationFailure, Context } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { isRegistryImage } from '../domain/images/builtin';
import { imagePullWorkflowId, type ImagePullInput, type NodePullResult } from '../domain/images/image-pull';
import { PercentMilestones } from '../domain/images/pull-progress';
import { failureReason } from '../domain/failure-reason';
import { nodeState } from '../domain/nodes/node';
import type { SandboxKey, SandboxSpec } from '../domain/sandbox/sandbox';
import { getNode } from '../store/nodes';
import { RegistryImageStore, type RegistryImageRow } from '../store/registry-images';
import { ResourceStore } from '../store/resources';
import { noteFailed, noteProgress, notePulled, noteTenths, noteWaiting } from './image-pull-node';
import type { ActivityDeps } from './support/activity-deps';

/** How often a waiter copies the pull's progress from the image's row to its resource, and tells Temporal it is alive. */
const RELAY_MS = 1_000;

/** The failure type of a wait whose pull's node is LOST: job executions move to another node on it (workflows/job-execution.ts). */
export const NODE_LOST_FAILURE = 'NodeLost';

/**
 * The control plane's side of pulls as workflows: a sandbox (a workload's revision, a job's
 * execution) waiting for its registry image starts the image-pull workflow of its workspace,
 * node and reference, or joins the one running (its id says which: two asking at once pull
 * once), and waits for its outcome, saying so on the resource: its events (and one for each tenth
 * of the bytes), and its state's `image` with the progress the pull writes on the image's row,
 * copied every second.
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

  const rowOn = async (key: SandboxKey, image: string, nodeQueue: string): Promise<RegistryImageRow | undefined> => (await images.find(key.workspaceId, image)).find((row) => row.node_queue === nodeQueue);
  const lost = (nodeId: string) => isLost(pg, nodeId, config.nodeLostSeconds);

  /**
   * Copies the row's progress onto the resource while the pull runs; with `watchNode`, rejects
   * `nodeLost` once that node is LOST. A pull joined half-way tells its tenths from where it was.
   */
  async function relay(key: SandboxKey, image: string, nodeQueue: string, watchNode: string | undefined, nodeLost: (err: Error) => void) {
    const joined = await rowOn(key, image, nodeQueue).catch(() => undefined);
    const pulling = joined?.state === 'PULLING' ? joined.progress : undefined;
    const milestones = new PercentMilestones(pulling?.percent ?? 0, pulling?.startedAt);
    const timer = setInterval(() => {
      Context.current().heartbeat();
      void (async () => {
        if (watchNode !== undefined && (await lost(watchNode))) {
          nodeLost(ApplicationFailure.nonRetryable(`node '${watchNode}' is LOST while it pulls '${image}'`, NODE_LOST_FAILURE));
          return;
        }
        const row = await rowOn(key, image, nodeQueue);
        if (row?.state !== 'PULLING' || !row.progress) return;
        await noteProgress(store, key.id, image, row.progress, milestones);
      })()
        // Progress is news, not record: the next copy supersedes a failed one.
        .catch(() => undefined);
    }, RELAY_MS);
    return { stop: () => clearInterval(timer), milestones };
  }

  return {
    /**
     * Waits for the resource's registry image on its node through the image-pull workflow;
     * answers the digest. With `watch`, a job execution's: the wait fails (NodeLost) once the node
     * is LOST, as a step on a dead node's queue times out, so the execution moves elsewhere.
     */
    async awaitImagePull(key: SandboxKey, spec: SandboxSpec, nodeQueue: string, watch?: { nodeId: string }): Promise<{ digest?: string }> {
      const image = spec.runtime?.image;
      if (image === undefined || !isRegistryImage(image)) return {};
      const registryConnection = spec.runtime?.registryConnection;
      const request = { workspaceId: key.workspaceId, reference: image, requester: key.name, ...(registryConnection === undefined ? {} : { registryConnection }) };
      await noteWaiting(store, key.id, image);
      const handle = await startOrJoin(imagePullWorkflowId(key.workspace, nodeQueue, image, registryConnection), { workspace: key.workspace, nodeQueue, request });
      const wait = resultUnlessLost(temporal, handle);
      const { stop, milestones } = await relay(key, image, nodeQueue, watch?.nodeId, wait.nodeLost);
      try {
        const pulled = await wait.outcome;
        stop();
        // The tenths the pull passed after the last copy (it ended between two).
        await noteTenths(store, key.id, image, milestones.passed(pulled.progress?.percent, pulled.progress?.startedAt), {});
        await notePulled(store, key.id, image, pulled);
        return { digest: pulled.digest };
      } catch (err) {
        stop();
        wait.abandon();
        if (err instanceof ApplicationFailure) throw err;
        if (!(err instanceof WorkflowFailedError)) throw err;
        // The pull's own reason (not found, refused...), not the wrappers around it.
        const reason = failureReason(err);
        await noteFailed(store, key.id, image, reason);
        throw ApplicationFailure.nonRetryable(reason, 'ImagePullError');
      }
    },
  };
}

/**
 * The pull's outcome, unless `nodeLost` is told first (then its failure); abandoning the wait
 * ends its long poll for the result. Neither side is ever an unhandled rejection.
 */
function resultUnlessLost(temporal: ActivityDeps['temporal'], handle: WorkflowHandle) {
  let nodeLost!: (err: Error) => void;
  const lostNode = new Promise<never>((_, reject) => (nodeLost = reject));
  lostNode.catch(() => undefined);
  const abandon = new AbortController();
  const result = temporal.withAbortSignal(abandon.signal, () => handle.result() as Promise<NodePullResult>);
  result.catch(() => undefined);
  return { outcome: Promise.race([result, lostNode]), nodeLost, abandon: () => abandon.abort() };
}

/** Whether the node `nodeId` is LOST (silent past HANGAR_NODE_LOST_SECONDS), as placement judges it. */
async function isLost(pg: ActivityDeps['pg'], nodeId: string, lostAfterSeconds: number): Promise<boolean> {
  const node = await getNode(pg, nodeId);
  return node !== undefined && nodeState(node.silent_seconds, lostAfterSeconds) === 'LOST';
}

export type ImagePullControlActivities = ReturnType<typeof createImagePullControlActivities>;
