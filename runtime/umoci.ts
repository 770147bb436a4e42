import { runImageTool } from './image-tools';

/**
 * Unpacks the image tagged `tag` in an OCI layout into a runtime bundle folder (which must not
 * exist yet) with umoci: its layers applied in order, whiteouts honoured, owners and modes kept.
 * The bundle holds `rootfs/` and umoci's own notes; the caller renames it into place.
 */
export async function unpackImage(options: { layoutDir: string; tag: string; bundleDir: string; umociPath: string }): Promise<void> {
  const result = await runImageTool(options.umociPath, ['unpack', '--image', `${options.layoutDir}:${options.tag}`, options.bundleDir], {});
  if (result.code !== 0) throw new Error(`umoci could not unpack the image: ${result.stderr.trim().split('\n').pop() ?? `exit ${result.code}`}`);
}
