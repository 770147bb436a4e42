import { DEFAULT_IMAGE, UNRECORDED_IMAGE } from './builtin';

/** The part of a sandbox's, workload's or job's spec that names its image. */
export interface ImageSpec {
  runtime?: { image?: string };
}

/**
 * The spec as it is stored, its image recorded: the one it names; else, on an update, the one
 * recorded before (an update naming none moves nothing, and a sandbox's image cannot change);
 * else, on a create, `defaultImage`. So GET shows the image each resource runs on, and a later
 * change of the platform's default leaves every existing resource where it was.
 */
export function withRecordedImage<S extends ImageSpec>(spec: S, before: ImageSpec | undefined, defaultImage: string = DEFAULT_IMAGE): S {
  if (spec.runtime?.image) return spec;
  const image = before ? before.runtime?.image || UNRECORDED_IMAGE : defaultImage;
  return { ...spec, runtime: { ...spec.runtime, image } };
}
