import { BUILT_BASE_IMAGE } from '../domain/images/builtin';
import type { NodeImageStore } from '../store/node-images';

/** base-image as a node stores it. */
export interface NodeBaseImage {
  digest: string;
  storedBytes: number;
}

/** What of the node's runtime finds and builds base-image (runtime/base-image.ts). */
export interface BaseImageRuntime {
  findBaseImage(): Promise<NodeBaseImage | undefined>;
  ensureBaseImage(progress?: (step: string) => void): Promise<NodeBaseImage>;
}

/** Where the node records what it holds of base-image, read by `/v0/images/base-image`. */
export interface NodeImageRecords {
  store: NodeImageStore;
  nodeId: string;
}

/** What the caller says on the way (a sandbox waiting for the image writes it on its events). */
export interface BaseImageSteps {
  present?(image: NodeBaseImage): Promise<unknown>;
  building?(): Promise<unknown>;
  built?(image: NodeBaseImage): Promise<unknown>;
}

/**
 * base-image on this node: found, or built now, the node's record saying BUILDING meanwhile, then
 * READY with its digest and size, or FAILED with the reason. The node worker calls it at its start,
 * in the background, so that the first sandbox rarely waits; the prepare step of a sandbox on
 * base-image calls it too and then waits on that same build (one per node: DebianBaseImage.ensure
 * shares it within a process and a file lock across processes), or finds the image at once.
 */
export async function ensureNodeBaseImage(runtime: BaseImageRuntime, records: NodeImageRecords | undefined, steps: BaseImageSteps = {}): Promise<NodeBaseImage> {
  const record = async (update: Parameters<NodeImageStore['record']>[2]) => {
    await records?.store.record(records.nodeId, BUILT_BASE_IMAGE, update);
  };
  const present = await runtime.findBaseImage();
  if (present) {
    await record({ state: 'READY', digest: present.digest, sizeBytes: present.storedBytes });
    await steps.present?.(present);
    return present;
  }
  await steps.building?.();
  await record({ state: 'BUILDING' });
  let built: NodeBaseImage;
  try {
    built = await runtime.ensureBaseImage();
  } catch (err) {
    await record({ state: 'FAILED', reason: (err as Error).message });
    throw err;
  }
  await record({ state: 'READY', digest: built.digest, sizeBytes: built.storedBytes });
  await steps.built?.(built);
  return built;
}
