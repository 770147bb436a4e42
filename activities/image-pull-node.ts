import { ApplicationFailure } from '@temporalio/activity';
import { isRegistryImage, pullsEveryTime } from '../domain/images/builtin';
import { ImagePullError } from '../domain/images/pull-failure';
import type { RegistryAccount } from '../domain/integrations/registry-credentials';
import type { SandboxKey, SandboxSpec } from '../domain/sandbox/sandbox';
import { SandboxSpecError } from '../runtime/sandbox-runtime';
import type { RegistryImageStore, PullProgress } from '../store/registry-images';
import type { ResourceStore } from '../store/resources';
import type { RegistryAccounts } from './support/registry-accounts';

/** What a pull needs of the node's runtime. */
export interface PullRuntime {
  pullImage(reference: string, options?: { credentials?: RegistryAccount; onProgress?: (progress: PullProgress) => void }): Promise<{ digest: string; storedBytes: number }>;
  findImage(reference: string): Promise<{ digest: string; authenticated: boolean; storedBytes: number } | undefined>;
}

export interface ImagePullDeps {
  runtime: PullRuntime;
  store: ResourceStore;
  images: RegistryImageStore;
  /** This node's task queue: the workspace's image rows are per node. */
  nodeQueue: string;
  registryAccounts?: RegistryAccounts;
}

/** How often a pull's progress is written (the resource's state and the image's row). */
const PROGRESS_EVERY_MS = 1_000;

/** The pull as a resource's status says it: `pulling image 'x': 12.5 MB received, 1 layer unpacked`. */
export function pullMessage(reference: string, progress: PullProgress): string {
  const layers = `${progress.layersDone} layer${progress.layersDone === 1 ? '' : 's'} unpacked`;
  return `pulling image '${reference}': ${(progress.bytesDone / 1e6).toFixed(1)} MB received, ${layers}`;
}

/**
 * Pulls the image a sandbox (or a workload, or a job's execution) names onto this node when it
 * is a registry's (a built-in image needs nothing), and keeps the workspace's view of it: the
 * resource's events and state say it waits for its image and how far the pull is (every second),
 * and the workspace's row of the image (GET /v0/images) goes PULLING -> READY with its digest and
 * stored size, or FAILED with the reason. Answers the digest.
 *
 * With `spec.runtime.registryConnection` the pull gives that connection's credentials, and always
 * asks the registry: they are checked every time. An image last pulled with credentials is not
 * started from the node's copy by a resource without them. The registry's refusals (not found,
 * unauthorized) and a malformed reference do not get better by retrying; an unreachable registry
 * may, and is retried.
 */
export async function pullResourceImage(deps: ImagePullDeps, key: SandboxKey, spec: SandboxSpec): Promise<{ digest?: string }> {
  const { runtime, store, images, nodeQueue, registryAccounts } = deps;
  const image = spec.runtime?.image;
  if (image === undefined || !isRegistryImage(image)) return {};
  const connection = spec.runtime?.registryConnection;
  const found = pullsEveryTime(image) || connection !== undefined ? undefined : await runtime.findImage(image);
  const present = found && !found.authenticated ? found : undefined;
  if (present) {
    await store.note(key.id, { type: 'Normal', message: `image '${image}' is on the node (${present.digest})` }, { image: { reference: image, digest: present.digest, pull: 'PRESENT' } });
    await images.settle(key.workspaceId, image, nodeQueue, { state: 'READY', digest: present.digest, sizeBytes: present.storedBytes, message: `on the node for ${key.name} (${present.digest})` });
    return { digest: present.digest };
  }
  await store.note(key.id, { type: 'Normal', message: `waiting for its image: pulling '${image}' onto the node` }, { image: { reference: image, pull: 'PULLING' } });
  await images.startPull(key.workspaceId, image, nodeQueue, `pulling for ${key.name}`);
  const reporter = progressReporter(deps, key, image);
  try {
    if (connection !== undefined && !registryAccounts) throw ApplicationFailure.nonRetryable('this node worker cannot open integration connections', 'RegistryCredentialsError');
    const credentials = connection === undefined ? undefined : await registryAccounts!(key.workspaceId, connection, image);
    const pulled = await runtime.pullImage(image, { ...(credentials ? { credentials } : {}), onProgress: reporter.update });
    await reporter.stop();
    await store.note(key.id, { type: 'Normal', message: `image '${image}' pulled (${pulled.digest})` }, { image: { reference: image, digest: pulled.digest, pull: 'PULLED' } });
    await images.settle(key.workspaceId, image, nodeQueue, { state: 'READY', digest: pulled.digest, sizeBytes: pulled.storedBytes, message: `pulled for ${key.name} (${pulled.digest})` });
    return { digest: pulled.digest };
  } catch (err) {
    await reporter.stop();
    const refused = err instanceof ApplicationFailure && err.nonRetryable;
    const final = refused || (err instanceof ImagePullError && err.kind !== 'unreachable') || err instanceof SandboxSpecError;
    if (!final) throw err;
    const reason = (err as Error).message;
    // In the resource's own events: a job's execution, which has no events of its own, fails on it.
    await store.note(key.id, { type: 'Warning', message: `pull failed: ${reason}` }, { image: { reference: image, pull: 'FAILED' } });
    await images.settle(key.workspaceId, image, nodeQueue, { state: 'FAILED', reason });
    throw refused ? err : ApplicationFailure.nonRetryable(reason, err instanceof ImagePullError ? 'ImagePullError' : 'SandboxSpecError');
  }
}

/** Writes the newest progress at most once a second, never two writes at once; stop() waits for the last. */
function progressReporter({ store, images, nodeQueue }: ImagePullDeps, key: SandboxKey, image: string) {
  let latest: PullProgress | undefined;
  let writing: Promise<void> = Promise.resolve();
  const write = () => {
    const progress = latest;
    latest = undefined;
    if (!progress) return;
    writing = writing
      .then(async () => {
        await store.mergeState(key.id, { image: { reference: image, pull: 'PULLING', progress, message: pullMessage(image, progress) } });
        await images.progress(key.workspaceId, image, nodeQueue, progress);
      })
      // Progress is news, not record: a failed write is superseded by the next.
      .catch(() => undefined);
  };
  const timer = setInterval(write, PROGRESS_EVERY_MS);
  return {
    update: (progress: PullProgress) => {
      latest = progress;
    },
    async stop() {
      clearInterval(timer);
      write();
      await writing;
    },
  };
}
