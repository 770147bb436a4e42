import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  TimeoutFailure,
  isCancellation,
  patched,
  proxyActivities,
  sleep,
  upsertSearchAttributes,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { ImagePullControlActivities } from '../activities/image-pull-control';
import type { JobControlActivities } from '../activities/job-control';
import type { JobNodeActivities } from '../activities/job-node';
import type { NodePlacementActivities, Placement } from '../activities/node-placement';
import type { SandboxNodeActivities } from '../activities/sandbox-node';
import { isBuiltBaseImage, isRegistryImage } from '../domain/images/builtin';
import { finalExecutionStatus, taskChunks, type ExecutionKey, type ExecutionStatus, type JobRuntimeSettings, type TaskOutcome } from '../domain/jobs/execution';
import { AWAIT_PULL } from './image-pull';

export interface JobExecutionInput {
  key: ExecutionKey;
  settings: JobRuntimeSettings;
  taskCount: number;
  /** The job's code on the node, bound read-only at /app. */
  codeDir: string;
  /** The node of the API that started it: where executions ran before placement. */
  nodeQueue: string;
  /** When the execution was created (epoch ms): the start of its meter's period. */
  createdAt: number;
}

export interface JobExecutionResult {
  status: ExecutionStatus;
  message?: string;
}

/** Executions placed by free memory among the nodes, and moved off a node that is lost. */
export const JOB_PLACEMENT_PATCH = 'job-placement';

type Control = ReturnType<typeof proxyActivities<JobControlActivities & NodePlacementActivities>>;
type NodeActivities = ReturnType<typeof proxyActivities<JobNodeActivities>>;
type PullActivities = ReturnType<typeof proxyActivities<SandboxNodeActivities>>;

/** Executions on an image of a registry pull it onto their node before their sandbox starts there (runs started before had no such step). */
export const JOB_IMAGE_PULL_PATCH = 'job-registry-image-pull';
/** The pull is the workspace's image-pull workflow, shared with sandboxes and workloads asking at once (runs started before pulled with their own activity). */
export const JOB_PULL_WORKFLOW_PATCH = 'job-image-pull-workflow';
/** The failure of a pull wait whose node is LOST (activities/image-pull-control.ts NODE_LOST_FAILURE). */
const NODE_LOST_FAILURE = 'NodeLost';
/** Executions on base-image (the default) wait for its build in the node's prepare step, with heartbeats, rather than in their start's time limit. */
export const JOB_BASE_IMAGE_PATCH = 'job-base-image-prepare';

const NODE_STEP: ActivityOptions = { startToCloseTimeout: '60s', retry: { initialInterval: '200ms', maximumInterval: '5s', maximumAttempts: 10 } };
/** A pull takes as long as its image's download; the heartbeat tells a dead worker apart (as a sandbox's pull). */
const PULL_STEP: ActivityOptions = { startToCloseTimeout: '30m', heartbeatTimeout: '10s', retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 5 } };

/** How an execution's pull reaches its node: the pull activity on the node's queue (runs of old), or the wait for the image-pull workflow, watching the node when it is placed. */
interface PullRoute {
  pulls: PullActivities;
  nodeQueue: string;
  nodeId?: string;
}

const pullWaits = () => proxyActivities<ImagePullControlActivities>(AWAIT_PULL);

/**
 * Starts the execution's sandbox on a node, pulling its image there first when it is a
 * registry's: through the workspace's image-pull workflow, so a sandbox or a workload asking for
 * it at once shares the pull (credentials by connection name, opened on the node); runs started
 * before with the sandbox's pull step. The job's events say it waits for its image.
 */
async function startSandboxOn(input: JobExecutionInput, node: NodeActivities, route: PullRoute): Promise<void> {
  const { image, registryConnection } = input.settings;
  const job = { id: input.key.jobId, workspace: input.key.workspace, workspaceId: input.key.workspaceId, name: input.key.jobName };
  if (isRegistryImage(image) && patched(JOB_IMAGE_PULL_PATCH)) {
    const spec = { runtime: { image, ...(registryConnection === undefined ? {} : { registryConnection }) } };
    if (patched(JOB_PULL_WORKFLOW_PATCH)) await pullWaits().awaitImagePull(job, spec, route.nodeQueue, route.nodeId === undefined ? undefined : { nodeId: route.nodeId });
    else await route.pulls.pullSandboxImage(job, spec);
  } else if (isBuiltBaseImage(image) && patched(JOB_BASE_IMAGE_PATCH)) {
    await route.pulls.prepareBaseImage(job);
  }
  await node.startJobSandbox(input.key, input.settings, input.codeDir);
}

function chunkOptions(settings: JobRuntimeSettings, chunkSize: number): ActivityOptions {
  return {
    // Every attempt of every task of a chunk may use its whole timeout; the margin covers the agent's round trips.
    startToCloseTimeout: `${(settings.timeoutSeconds * (settings.maxRetries + 1) + 60) * chunkSize}s`,
    // A dead worker is noticed by the missing heartbeat; the retry resumes from the task's row.
    heartbeatTimeout: '5s',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '200ms', maximumInterval: '5s', maximumAttempts: 20 },
  };
}

/** The execution's node activities and how they reach it: `onNode` runs a step there (with its sandbox), `removeSandbox` ends it. */
interface ExecutionNode {
  onNode<T>(step: (node: NodeActivities, tasks: NodeActivities) => Promise<T>): Promise<T>;
  removeSandbox(): Promise<void>;
}

/** Executions started before placement: the API's node, for good. */
function fixedNode(input: JobExecutionInput, chunkSize: number): ExecutionNode {
  const node = proxyActivities<JobNodeActivities>({ taskQueue: input.nodeQueue, ...NODE_STEP });
  const tasks = proxyActivities<JobNodeActivities>({ taskQueue: input.nodeQueue, ...chunkOptions(input.settings, chunkSize) });
  const pulls = proxyActivities<SandboxNodeActivities>({ taskQueue: input.nodeQueue, ...PULL_STEP });
  let sandbox: Promise<void> | undefined;
  return {
    onNode: async (step) => {
      sandbox ??= startSandboxOn(input, node, { pulls, nodeQueue: input.nodeQueue });
      await sandbox;
      return step(node, tasks);
    },
    removeSandbox: () => node.removeJobSandbox(input.key),
  };
}

/**
 * One job execution, `job/<workspace>/<job>/<executionId>`: placed on a node (recorded on its
 * row), a sandbox there for its tasks, then the tasks with at most maxConcurrentTasks in flight:
 * that many lanes, each taking the next chunk of tasks and running it as one activity on the node
 * (each task to its end, retries and timeout included), then the sandbox's removal, the final
 * status and the meter. A chunk whose activity completed is in this history and never runs again;
 * one in flight when a worker died is run again by its activity, which skips the tasks its rows
 * say ended and re-attaches to the one running. A node that stops answering is waited for while
 * UNREACHABLE; once LOST the execution moves to another node (a new sandbox there), where the
 * unfinished chunks run, their ended tasks skipped. Cancelling the workflow cancels the running
 * activities, which kill their processes.
 */
export async function jobExecution(input: JobExecutionInput): Promise<JobExecutionResult> {
  const { key, settings } = input;
  upsertSearchAttributes({ HangarWorkspace: [key.workspace], HangarResourceKind: ['job'], HangarResourceName: [key.jobName] });
  const control: Control = proxyActivities<JobControlActivities & NodePlacementActivities>({
    startToCloseTimeout: '30s',
    retry: { initialInterval: '200ms', maximumInterval: '10s' },
  });
  const lanes = Math.min(settings.maxConcurrentTasks, input.taskCount);
  const chunks = taskChunks(input.taskCount, lanes);
  const chunkSize = chunks[0]?.length ?? 1;
  const where = patched(JOB_PLACEMENT_PATCH) ? new FollowedNode(input, control, await control.placeJobExecution(key.id), chunkSize) : fixedNode(input, chunkSize);

  const outcomes: TaskOutcome[] = [];
  let status: ExecutionStatus = 'failed';
  let message: string | undefined;
  try {
    await control.markJobExecution(key.id, 'pending');
    await where.onNode(async () => undefined);
    await control.markJobExecution(key.id, 'running');
    let next = 0;
    const lane = async () => {
      while (next < chunks.length) {
        const indices = chunks[next++];
        for (const outcome of await where.onNode((_, tasks) => tasks.runJobTasks({ key, indices, settings }))) outcomes[outcome.index] = outcome;
      }
    };
    await Promise.all(Array.from({ length: lanes }, lane));
    status = finalExecutionStatus(outcomes);
  } catch (err) {
    if (isCancellation(err)) status = 'cancelled';
    else message = (err as Error).message;
  }
  await CancellationScope.nonCancellable(async () => {
    await where.removeSandbox();
    await control.finishJobExecution({ key, status, memoryMb: settings.memoryMb, startedAt: input.createdAt });
  });
  return { status, message };
}

/** A failure that may be its node's absence: a heartbeat or a start that timed out, or a pull wait that saw its node LOST. */
function mayBeNodeLoss(err: unknown): boolean {
  if (!(err instanceof ActivityFailure)) return false;
  return err.cause instanceof TimeoutFailure || (err.cause instanceof ApplicationFailure && err.cause.type === NODE_LOST_FAILURE);
}

/** Times the same node is tried again after it timed out while READY, before the step's failure stands. */
const RETRIES_ON_A_READY_NODE = 3;

/**
 * The node an execution runs on, followed when it is lost: each step runs on the current node
 * (its sandbox started there first, once), and a step that timed out asks the control plane
 * whether the node is lost; lanes that fail together wait for one move.
 */
class FollowedNode implements ExecutionNode {
  private moving: Promise<void> | undefined;
  private readonly sandboxes = new Map<string, Promise<void>>();
  private readyRetries = 0;

  constructor(
    private readonly input: JobExecutionInput,
    private readonly control: Control,
    private current: Placement,
    private readonly chunkSize: number,
  ) {}

  private activities(at: Placement) {
    // A queue no worker polls (a dead node) fails a step within 20 s rather than holding it.
    const onQueue = { taskQueue: at.nodeQueue, scheduleToStartTimeout: '20s' } as const;
    return {
      node: proxyActivities<JobNodeActivities>({ ...NODE_STEP, ...onQueue }),
      tasks: proxyActivities<JobNodeActivities>({ ...chunkOptions(this.input.settings, this.chunkSize), ...onQueue }),
      pulls: proxyActivities<SandboxNodeActivities>({ ...PULL_STEP, ...onQueue }),
    };
  }

  private sandboxOn(at: Placement, node: NodeActivities, pulls: PullActivities): Promise<void> {
    let started = this.sandboxes.get(at.nodeId);
    if (!started) {
      started = startSandboxOn(this.input, node, { pulls, nodeQueue: at.nodeQueue, nodeId: at.nodeId }).catch((err) => {
        this.sandboxes.delete(at.nodeId);
        throw err;
      });
      this.sandboxes.set(at.nodeId, started);
    }
    return started;
  }

  async onNode<T>(step: (node: NodeActivities, tasks: NodeActivities) => Promise<T>): Promise<T> {
    for (;;) {
      const at = this.current;
      const { node, tasks, pulls } = this.activities(at);
      try {
        await this.sandboxOn(at, node, pulls);
        return await step(node, tasks);
      } catch (err) {
        if (!mayBeNodeLoss(err)) throw err;
        if (!(await this.followFrom(at))) throw err;
      }
    }
  }

  /** After `at` timed out: false when the step's failure stands (its node is READY and was retried enough). */
  private async followFrom(at: Placement): Promise<boolean> {
    if (this.current !== at) return true;
    this.moving ??= this.moveIfLost(at).finally(() => (this.moving = undefined));
    await this.moving;
    return this.current !== at || this.readyRetries++ < RETRIES_ON_A_READY_NODE;
  }

  private async moveIfLost(at: Placement): Promise<void> {
    for (;;) {
      const verdict = await this.control.moveJobExecutionOffLostNode(this.input.key.id, at.nodeId);
      if (verdict.do === 'retry') return;
      if (verdict.do === 'moved') {
        this.current = verdict.to;
        return;
      }
      await sleep('5s');
    }
  }

  /** On the current node; one lost meanwhile keeps its sandbox until it comes back and removes it (its worker does, at start). */
  async removeSandbox(): Promise<void> {
    await this.activities(this.current)
      .node.removeJobSandbox(this.input.key)
      .catch((err) => {
        if (!mayBeNodeLoss(err)) throw err;
      });
  }
}
