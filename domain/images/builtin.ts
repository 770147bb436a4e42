import { parseImageReference } from './reference';

/**
 * The platform's built-in images: `base`, the host's own system folders (runtime/image.ts), and
 * `base-image`, a Debian tree each node builds once from Debian's packages (runtime/base-image.ts).
 * The reference service (and its SDK's default) calls its default image `base-image`.
 */
export const BUILTIN_IMAGE_NAMES = ['base', 'base-image'] as const;

/** The built-in image a node builds and stores itself, before the first sandbox on it starts. */
export const BUILT_BASE_IMAGE = 'base-image';

/** The built-in image of host folders: the node's own `/usr`, `/bin`, `/lib...`, read-only. */
export const HOST_IMAGE = 'base';

/**
 * The image a new sandbox, workload or job naming none gets, recorded in its stored spec at its
 * creation (domain/images/recorded-image.ts): a later change of the default moves nothing made before.
 */
export const DEFAULT_IMAGE = BUILT_BASE_IMAGE;

/**
 * What a spec naming no image runs on: one stored before images were recorded, when `base` was
 * the default. Migration 028 wrote `base` into every stored spec; only workflows started before
 * it still carry specs without one.
 */
export const UNRECORDED_IMAGE = HOST_IMAGE;

/**
 * The image name in a reference written with container habits, `[namespace/]name[:tag]`
 * (`blaxel/base-image:latest`, `hangar/base`): the built-in images are one version each per node,
 * shared by every workspace, so namespace, tag and digest name nothing more.
 */
export function imageName(reference: string): string {
  const lastPart = reference.slice(reference.lastIndexOf('/') + 1);
  return lastPart.split(/[:@]/, 1)[0];
}

/** Whether a reference names `base-image`, which the node builds before a sandbox can start on it. */
export function isBuiltBaseImage(reference: string): boolean {
  return imageName(reference) === BUILT_BASE_IMAGE;
}

/** Whether a reference names a built-in image, whatever registry, namespace or tag it is written with. */
export function isBuiltinImage(reference: string): boolean {
  return (BUILTIN_IMAGE_NAMES as readonly string[]).includes(imageName(reference));
}

/**
 * Whether a sandbox's image is pulled from a registry before it starts: a well-formed reference
 * that names its registry host (`127.0.0.1:5000/team/box:1`) and no built-in image. A name
 * without a registry stays one of the platform's own images (an unknown one is refused).
 */
export function isRegistryImage(reference: string): boolean {
  if (isBuiltinImage(reference)) return false;
  try {
    return parseImageReference(reference).registry !== undefined;
  } catch {
    return false;
  }
}

/**
 * Whether a registry image is pulled again before each sandbox starts on it even when the node
 * has it: a reference with no version, or `latest`, names whatever the registry holds now. A
 * fixed tag or a digest is pulled once per node (as Kubernetes' default pull policy does), so
 * a sandbox on a cached image starts without asking its registry.
 */
export function pullsEveryTime(reference: string): boolean {
  const parsed = parseImageReference(reference);
  return parsed.digest === undefined && (parsed.tag ?? 'latest') === 'latest';
}
