import { ApplicationFailure } from '@temporalio/activity';
import { isRegistryImage, pullsEveryTime } from '../domain/images/builtin';
import { ImagePullError } from '../domain/images/pull-failure';
import type { RegistryAccount } from '../domain/integrations/registry-credentials';
import type { NodePullRequest, NodePullResult } from '../domain/images/image-pull';
import type { SandboxKey, SandboxSpec } from '../domain/sandbox/sandbox';
import { SandboxSpecError } from '../runtime/sandbox-runtime';
import type { Pool } from 'pg';
import { completedProgress, milestoneMessage, PercentMilestones, pullMessage, withPercent, type PullProgress } from '../domain/images/pull-progress';
import { RegistryImageStore } from '../store/registry-images';
import { ResourceStore } from '../store/resources';
import { whileHeartbeating } from './support/heartbeat';
import type { RegistryAccounts } from './support/registry-accounts';

/** What a pull needs of the node's runtime. */
export interface PullRuntime {
  pullImage(reference: string, options?: { credentials?: RegistryAccount; onProgress?: (progress: PullProgress) => void }): Promise<{ digest: string; storedBytes: number }>;
  findImage(reference: string): Promise<{ digest: string; authenticated: boolean; storedBytes: number } | undefined>;
}

export interface ImagePullDeps {
  runtime: PullRuntime;
  /** The resources' rows, for the events of those waiting. */
  store: ResourceStore;
  images: RegistryImageStore;
  /** This node's task queue: the workspace's image rows are per node. */
  nodeQueue: string;
  registryAccounts?: RegistryAccounts;
}

/** The image-pull workflow's node activity: a registry image onto this node for a workspace (pullOntoNode below). */
export function createImagePullNodeActivities({ runtime, pg, registryAccounts, nodeQueue }: { runtime: PullRuntime; pg: Pool; registryAccounts?: RegistryAccounts; nodeQueue: string }) {
  const deps: ImagePullDeps = { runtime, store: new ResourceStore(pg), images: new RegistryImageStore(pg), nodeQueue, ...(registryAccounts ? { registryAccounts } : {}) };
  return {
    pullImageOntoNode: (request: NodePullRequest) => whileHeartbeating(() => pullOntoNode(deps, request)),
  };
}

export type ImagePullNodeActivities = ReturnType<typeof createImagePullNodeActivities>;

/** How often a pull's progress is written (the resource's state and the image's row). */
const PROGRESS_EVERY_MS = 1_000;

/** Told of a pull's start (the image is not on the node) and of its progress, once a second. */
export interface PullHooks {
  started?(): Promise<void>;
  progress?(progress: PullProgress): Promise<void>;
}

/**
 * Pulls a registry's image onto this node for a workspace, keeping the workspace's row of it
 * (GET /v0/images): PULLING with its progress every second, then READY with its digest and stored
 * size, or FAILED with the reason. A fixed tag already on the node is not asked for again (unless
 * credentials are given: they are checked every time; and an image last pulled with credentials
 * is not taken from the node's copy without them). The registry's refusals (not found,
 * unauthorized) and a malformed reference do not get better by retrying (non-retryable); an
 * unreachable registry may, and is retried. `hooks` hear when a pull starts (the image is not on
 * the node) and its progress.
 */
export async function pullOntoNode(deps: ImagePullDeps, request: NodePullRequest, hooks: PullHooks = {}): Promise<NodePullResult> {
  const { runtime, images, nodeQueue, registryAccounts } = deps;
  const { workspaceId, reference: image, registryConnection: connection, requester } = request;
  const found = pullsEveryTime(image) || connection !== undefined ? undefined : await runtime.findImage(image);
  const present = found && !found.authenticated ? found : undefined;
  if (present) {
    await images.settle(workspaceId, image, nodeQueue, { state: 'READY', digest: present.digest, sizeBytes: present.storedBytes, message: `on the node for ${requester} (${present.digest})` });
    return { digest: present.digest, pull: 'PRESENT' };
  }
  await hooks.started?.();
  await images.startPull(workspaceId, image, nodeQueue, `pulling for ${requester}`);
  // The image's events tell each tenth of the pull's bytes.
  const milestones = new PercentMilestones(0);
  const reporter = progressReporter(async (progress) => {
    await hooks.progress?.(progress);
    await images.progress(workspaceId, image, nodeQueue, progress, milestones.passed(progress.percent).map((tenth) => milestoneMessage(image, tenth)));
  });
  try {
    if (connection !== undefined && !registryAccounts) throw ApplicationFailure.nonRetryable('this node worker cannot open integration connections', 'RegistryCredentialsError');
    const credentials = connection === undefined ? undefined : await registryAccounts!(workspaceId, connection, image);
    const startedAt = new Date().toISOString();
    const pulled = await runtime.pullImage(image, { ...(credentials ? { credentials } : {}), onProgress: (progress) => reporter.update({ ...progress, startedAt }) });
    const last = await reporter.stop();
    const progress = last && completedProgress(last);
    await images.settle(workspaceId, image, nodeQueue, { state: 'READY', digest: pulled.digest, sizeBytes: pulled.storedBytes, message: `pulled for ${requester} (${pulled.digest})`, ...(progress ? { progress } : {}) });
    return { digest: pulled.digest, pull: 'PULLED', ...(progress ? { progress } : {}) };
  } catch (err) {
    await reporter.stop();
    const refused = err instanceof ApplicationFailure && err.nonRetryable;
    const final = refused || (err instanceof ImagePullError && err.kind !== 'unreachable') || err instanceof SandboxSpecError;
    if (!final) throw err;
    const reason = (err as Error).message;
    await images.settle(workspaceId, image, nodeQueue, { state: 'FAILED', reason });
    throw refused ? err : ApplicationFailure.nonRetryable(reason, err instanceof ImagePullError ? 'ImagePullError' : 'SandboxSpecError');
  }
}

/**
 * The pull of a sandbox's (a workload's, a job execution's) registry image as one activity on
 * its node (pullOntoNode), saying so on the resource: its events (`waiting for its image: pulling
 * '...' onto the node`, then the digest, or `pull failed: ...`, where a job's execution, which has
 * no events of its own, shows why it failed) and its state's `image` with the progress. Runs that
 * pull through the image-pull workflow instead use awaitImagePull (image-pull-control.ts).
 */
export async function pullResourceImage(deps: ImagePullDeps, key: SandboxKey, spec: SandboxSpec): Promise<{ digest?: string }> {
  const { store } = deps;
  const image = spec.runtime?.image;
  if (image === undefined || !isRegistryImage(image)) return {};
  const registryConnection = spec.runtime?.registryConnection;
  const request: NodePullRequest = { workspaceId: key.workspaceId, reference: image, requester: key.name, ...(registryConnection === undefined ? {} : { registryConnection }) };
  const milestones = new PercentMilestones(0);
  try {
    const pulled = await pullOntoNode(deps, request, {
      started: async () => {
        await noteWaiting(store, key.id, image);
      },
      progress: (progress) => noteProgress(store, key.id, image, progress, milestones),
    });
    await notePulled(store, key.id, image, pulled);
    return { digest: pulled.digest };
  } catch (err) {
    if (err instanceof ApplicationFailure && err.nonRetryable) await noteFailed(store, key.id, image, err.message);
    throw err;
  }
}

export function noteWaiting(store: ResourceStore, id: string, image: string): Promise<boolean> {
  return store.note(id, { type: 'Normal', message: `waiting for its image: pulling '${image}' onto the node` }, { image: { reference: image, pull: 'PULLING' } });
}

/**
 * A waiter's copy of the pull's progress: its state's `image` (the message says how far), and an
 * event for each tenth of the bytes passed since it last looked (`milestones`, one per waiter).
 */
export async function noteProgress(store: ResourceStore, id: string, image: string, progress: PullProgress, milestones: PercentMilestones): Promise<void> {
  const state = { image: { reference: image, pull: 'PULLING', progress, message: pullMessage(image, progress) } };
  const tenths = milestones.passed(progress.percent, progress.startedAt);
  if (tenths.length === 0) return store.mergeState(id, state);
  await noteTenths(store, id, image, tenths, state);
}

/** An event for each tenth of a pull passed (`pulling '<reference>': 30 %`), merging `state`. */
export async function noteTenths(store: ResourceStore, id: string, image: string, tenths: number[], state: Record<string, unknown>): Promise<void> {
  for (const tenth of tenths) await store.note(id, { type: 'Normal', message: milestoneMessage(image, tenth) }, state);
}

export function notePulled(store: ResourceStore, id: string, image: string, pulled: NodePullResult): Promise<boolean> {
  const message = pulled.pull === 'PRESENT' ? `image '${image}' is on the node (${pulled.digest})` : `image '${image}' pulled (${pulled.digest})`;
  return store.note(id, { type: 'Normal', message }, { image: { reference: image, digest: pulled.digest, pull: pulled.pull, ...(pulled.progress ? { progress: pulled.progress } : {}) } });
}

export function noteFailed(store: ResourceStore, id: string, image: string, reason: string): Promise<boolean> {
  return store.note(id, { type: 'Warning', message: `pull failed: ${reason}` }, { image: { reference: image, pull: 'FAILED' } });
}

/**
 * Writes the newest progress (with its percentage) at most once a second, never two writes at
 * once; stop() waits for the last and answers the last progress told.
 */
function progressReporter(writeProgress: (progress: PullProgress) => Promise<void>) {
  let latest: PullProgress | undefined;
  let told: PullProgress | undefined;
  let writing: Promise<void> = Promise.resolve();
  const write = () => {
    const progress = latest;
    latest = undefined;
    if (!progress) return;
    // Progress is news, not record: a failed write is superseded by the next.
    writing = writing.then(() => writeProgress(progress)).catch(() => undefined);
  };
  const timer = setInterval(write, PROGRESS_EVERY_MS);
  return {
    update: (progress: PullProgress) => {
      latest = withPercent(progress);
      told = latest;
    },
    async stop(): Promise<PullProgress | undefined> {
      clearInterval(timer);
      write();
      await writing;
      return told;
    },
  };
}
